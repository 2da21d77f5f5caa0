"""bench/multilingual_eval_data.json keeps its promises (bench/multilingual_eval.py): every
expected key is a memory of the mind asked, enough questions each way in every language,
both splits, memories an agent could store, and no question sharing a word with its answer."""

from __future__ import annotations

import re

import pytest

from bench import multilingual_eval, search_eval
from memories.fields import CATEGORIES
from memories.rules import clean_key, clean_tags


@pytest.fixture(scope="module")
def data() -> dict:
    return multilingual_eval.load()


@pytest.fixture(scope="module")
def english() -> dict:
    return multilingual_eval.load_english()


def question_lists(data: dict):
    for lang in multilingual_eval.LANGS:
        for direction in multilingual_eval.DIRECTIONS:
            yield lang, direction, multilingual_eval.questions_of(data, lang, direction)


def test_every_language_is_asked_both_ways_with_both_splits(data):
    assert sorted(data["languages"]) == sorted(multilingual_eval.LANGS)
    for lang, direction, questions in question_lists(data):
        assert len(questions) >= 15, (lang, direction)
        assert {q["split"] for q in questions} == {"dev", "held"}, (lang, direction)


def test_held_questions_follow_the_fixed_rule(data):
    for lang, direction, questions in question_lists(data):
        held = [i for i, q in enumerate(questions, 1) if q["split"] == "held"]
        assert held == list(range(3, len(questions) + 1, 3)), (lang, direction)


def test_expected_keys_are_memories_of_the_mind_asked(data, english):
    english_keys = {m["key"] for m in english["memories"]}
    for lang, direction, questions in question_lists(data):
        own_keys = {m["key"] for m in data["languages"][lang]["memories"]}
        keys = english_keys if direction == "english" else own_keys
        for item in questions:
            assert item["expected"], item
            assert set(item["expected"]) <= keys, (lang, direction, item)


def test_memories_render_english_ones_and_could_be_stored(data, english):
    english_category = {m["key"]: m["category"] for m in english["memories"]}
    for lang in multilingual_eval.LANGS:
        memories = data["languages"][lang]["memories"]
        assert len(memories) >= 40, lang
        assert {m["category"] for m in memories} == set(CATEGORIES), lang
        assert (
            len({m["key"] for m in memories})
            == len({m["en_key"] for m in memories})
            == len(memories)
        )
        for memory in memories:
            assert english_category[memory["en_key"]] == memory["category"], memory
            assert clean_key(memory["key"]) == memory["key"]
            assert re.fullmatch(r"[a-z0-9_]+", memory["key"]), memory["key"]
            assert clean_tags(memory["tags"]) == memory["tags"]


def test_no_question_shares_a_word_with_what_it_asks_for(data, english):
    violations = []
    for lang, direction, questions in question_lists(data):
        memories = multilingual_eval.memories_asked(data, english, lang, direction)
        by_key = {m["key"]: m for m in memories}
        for item in questions:
            shared = search_eval.shared_words(item["q"], [by_key[k] for k in item["expected"]])
            if shared:
                violations.append((lang, item["q"], shared))
    assert violations == []


def test_the_check_finds_nothing(data, english):
    assert multilingual_eval.check_data(data, english) == []


def test_the_new_stop_words_drop_no_word_of_the_english_set(english):
    # The paraphrase check of search_eval_data.json must stay as strict as before them.
    before = frozenset((search_eval._ENGLISH_STOP + search_eval._GERMAN_STOP).split())
    texts = [" ".join([m["key"], m["content"], *m["tags"]]) for m in english["memories"]]
    texts += [q["q"] for q in english["questions"] + english["paraphrase_questions"]]
    words = {w for text in texts for w in re.findall(r"[a-z0-9]+", search_eval._fold(text))}
    newly_dropped = {w for w in words & multilingual_eval.STOP_WORDS if len(w) > 2} - before
    assert newly_dropped == set()
