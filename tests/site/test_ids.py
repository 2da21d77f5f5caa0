import re
from collections import Counter

from synapse_site.ids import ID_ALPHABET, SHARED_LENGTH, random_id, random_ids


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


def test_a_batch_of_ids_shares_a_random_start_and_nothing_else():
    batches = [random_ids("mem_", 500) for _ in range(10)]
    start = len("mem_") + SHARED_LENGTH
    for batch in batches:
        assert len(batch) == len(set(batch)) == 500
        assert all(re.fullmatch(r"mem_[a-z0-9]{20}", value) for value in batch)
        assert len({value[:start] for value in batch}) == 1
        # The rest of each id is its own: every position past the start varies in a batch.
        for position in range(start, len(batch[0])):
            assert len({value[position] for value in batch}) > 20
    assert len({batch[0][:start] for batch in batches}) == 10


def test_small_batches_are_plain_random_ids():
    assert random_ids("m_", 0) == []
    (value,) = random_ids("m_", 1)
    assert re.fullmatch(r"m_[a-z0-9]{20}", value)
