"""The chat logs of the conversational search evaluation (bench/conversation_eval_data.json):
the generator writes exactly the committed file, and the file keeps the promises the
evaluation's figures rely on."""

from __future__ import annotations

import copy
import json
import re

import pytest

from bench import conversation_eval, make_conversations


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(conversation_eval.DATA.read_text())


def turns_of(conversation: dict) -> list[dict]:
    return [turn for session in conversation["sessions"] for turn in session["turns"]]


def test_the_generator_writes_the_committed_file_byte_for_byte():
    written = make_conversations.render(make_conversations.generate())
    assert written == conversation_eval.DATA.read_text(), "run bench/make_conversations.py"


def test_the_file_is_json_that_renders_back_to_itself(data):
    assert make_conversations.render(data) == conversation_eval.DATA.read_text()


def test_enough_conversations_turns_and_questions_of_every_type(data):
    conversations = data["conversations"]
    assert len(conversations) >= 12
    assert sum(len(turns_of(c)) for c in conversations) >= 3000
    questions = [q for c in conversations for q in c["questions"]]
    assert len(questions) >= 500
    for conversation in conversations:
        assert 10 <= len(conversation["sessions"]) <= 16
        assert len(conversation["questions"]) >= 45
        assert len(conversation["speakers"]) == 2
    per_type = {kind: sum(q["type"] == kind for q in questions) for kind in conversation_eval.TYPES}
    assert set(q["type"] for q in questions) == set(conversation_eval.TYPES)
    assert min(per_type.values()) >= len(questions) / len(per_type) / 2  # roughly balanced


def test_a_third_of_the_conversations_is_held_out(data):
    splits = [c["split"] for c in data["conversations"]]
    assert set(splits) == {"dev", "held"}
    assert splits.count("held") == len(splits) // 3


def test_turn_ids_are_unique_and_say_where_the_turn_is(data):
    seen = set()
    for conversation in data["conversations"]:
        for session in conversation["sessions"]:
            for index, turn in enumerate(session["turns"], 1):
                assert turn["id"] == f"{conversation['id']}_s{session['session']:02d}_t{index:03d}"
                assert turn["id"] not in seen
                seen.add(turn["id"])


def test_every_turn_is_one_speaker_and_their_message(data):
    for conversation in data["conversations"]:
        speaker = re.compile(rf"^({'|'.join(map(re.escape, conversation['speakers']))}): \S")
        for turn in turns_of(conversation):
            assert speaker.match(turn["text"]), turn


def test_session_dates_ascend(data):
    for conversation in data["conversations"]:
        dates = [session["date"] for session in conversation["sessions"]]
        assert dates == sorted(set(dates)), conversation["id"]


def test_every_evidence_id_is_a_turn_of_its_conversation(data):
    for conversation in data["conversations"]:
        ids = {turn["id"] for turn in turns_of(conversation)}
        for question in conversation["questions"]:
            assert question["evidence"], question
            assert set(question["evidence"]) <= ids, question
            assert len(set(question["evidence"])) == len(question["evidence"]), question


def test_multi_questions_need_two_or_three_turns(data):
    for conversation in data["conversations"]:
        for question in conversation["questions"]:
            if question["type"] == "multi":
                assert 2 <= len(question["evidence"]) <= 3, question


def test_paraphrase_questions_share_no_content_word_with_their_evidence(data):
    for conversation in data["conversations"]:
        memories = conversation_eval.turn_memories(conversation)
        for question in conversation["questions"]:
            if question["type"] != "paraphrase":
                continue
            evidence = [memories[key] for key in question["evidence"]]
            shared = conversation_eval.paraphrase_overlap(
                question["q"], evidence, conversation["speakers"]
            )
            assert shared == [], (question, shared)


def test_the_data_check_finds_nothing(data):
    assert conversation_eval.check_data(data) == []


def test_the_data_check_finds_a_paraphrase_that_shares_a_word(data):
    broken = copy.deepcopy(data)
    conversation = broken["conversations"][0]
    question = next(q for q in conversation["questions"] if q["type"] == "paraphrase")
    turn = conversation_eval.turn_memories(conversation)[question["evidence"][0]]
    word = max(turn["content"].split(": ", 1)[1].split(), key=len)
    question["q"] += f" {word}"
    problems = conversation_eval.check_data(broken)
    assert len(problems) == 1 and "shares" in problems[0], problems


def test_a_turn_is_stored_as_a_note_keyed_by_its_id_and_tagged_with_its_session():
    session = {"session": 7, "date": "2023-05-08", "turns": []}
    turn = {"id": "c03_s07_t012", "text": "Maya: finally signed the lease!"}
    assert conversation_eval.turn_memory(turn, session) == {
        "category": "note",
        "key": "c03_s07_t012",
        "content": "Maya: finally signed the lease!",
        "tags": ["session-7", "2023-05-08"],
    }


def test_every_turn_passes_the_rules_of_a_memory(data):
    from memories.rules import clean_category, clean_content, clean_key, clean_tags

    for conversation in data["conversations"]:
        for memory in conversation_eval.turn_memories(conversation).values():
            assert clean_category(memory["category"]) == memory["category"]
            assert clean_key(memory["key"]) == memory["key"]
            assert clean_content(memory["content"]) == memory["content"]
            assert clean_tags(memory["tags"]) == memory["tags"]
