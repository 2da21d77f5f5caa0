"""The hygiene evaluations' data keep their promises: enough pairs of each kind, every third
held out, keys an agent could store, and no key twice."""

from __future__ import annotations

import pytest

from bench import contradictions_eval, duplicates_eval
from memories.fields import CATEGORIES
from memories.rules import clean_key


@pytest.mark.parametrize(
    ("module", "label"),
    [(duplicates_eval, "duplicate"), (contradictions_eval, "contradicts")],
)
def test_pairs_of_both_kinds_with_every_third_held(module, label):
    pairs = module.load()["pairs"]
    for value in (True, False):
        kind = [p for p in pairs if p[label] is value]
        assert len(kind) >= 40
        held = [n for n, p in enumerate(kind, 1) if p["split"] == "held"]
        assert held == list(range(3, len(kind) + 1, 3))
    keys = [p[side]["key"] for p in pairs for side in "ab"]
    assert len(keys) == len(set(keys))
    for p in pairs:
        for side in "ab":
            memory = p[side]
            assert memory["category"] in CATEGORIES
            assert clean_key(memory["key"]) == memory["key"]
            assert memory["content"].strip()
