import re
from collections import Counter

from synapse_site.ids import ID_ALPHABET, random_id


def test_ids_have_prefix_length_and_alphabet():
    for _ in range(200):
        value = random_id("mem_")
        assert re.fullmatch(r"mem_[a-z0-9]{20}", value)


def test_ids_do_not_repeat():
    assert len({random_id("m_") for _ in range(5000)}) == 5000


def test_every_position_uses_the_whole_alphabet():
    ids = [random_id("", length=4) for _ in range(6000)]
    for position in range(4):
        seen = Counter(value[position] for value in ids)
        assert set(seen) == set(ID_ALPHABET)
