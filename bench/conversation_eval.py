"""Search quality on chat logs: hit@5, recall@10 and MRR@10 per mode and per question type,
on the dev and the held-out conversations side by side.

    .venv/bin/python bench/search_eval.py --set conversation [--verbose] [--database postgres]

bench/conversation_eval_data.json (written by bench/make_conversations.py: conversations
between two people over sessions weeks apart, small talk and all, and questions about what
they said) is loaded into a fresh database: each conversation a mind of its own, each turn
one memory (category `note`, key the turn's id, content `Speaker: text`, tags the session
and its date, stored at the session's date). With embeddings on, every turn gets its vector
the way the worker gives it (search_eval.embed_mind). Every question is then asked of
memory_search in keyword, semantic and hybrid mode, ten results each:

- hit@5:     an evidence turn is among the first five;
- recall@10: the share of the question's evidence turns among the first ten;
- MRR@10:    1/rank of the first evidence turn in the first ten (0 when none is).

Question types: `single` (one turn answers it), `paraphrase` (shares no content word with
its evidence turns, the speakers' names aside: `paraphrase_overlap`), `multi` (the answer
takes two or three turns together), `temporal` (order and time: before, after, when).

The held-out conversations (split "held") are there to check, once, a choice made on the
dev ones: never tune on them. Nothing is asserted; the figures are printed.

To build on: `load_conversations` puts the data into minds and returns
[(mind, questions, split)]; `evaluate_conversation(method, questions, mind=...)` asks each
question of `method(question, mind=...) -> [keys]` and returns one Outcome per question;
`summary` averages Outcomes.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, search_eval

DATA = Path(__file__).with_name("conversation_eval_data.json")
MODES = ("keyword", "semantic", "hybrid")
TYPES = ("single", "paraphrase", "multi", "temporal")
SPLITS = ("dev", "held")
DEPTH = 10  # results asked for: recall and MRR are at 10
HIT_AT = 5


# --- The data and its promises ----------------------------------------------------------------


def load_data() -> dict:
    return json.loads(DATA.read_text())


def turn_memory(turn: dict, session: dict) -> dict:
    """The memory a turn is stored as (the fields Memory takes)."""
    return {
        "category": "note",
        "key": turn["id"],
        "content": turn["text"],
        "tags": [f"session-{session['session']}", session["date"]],
    }


def turn_memories(conversation: dict) -> dict[str, dict]:
    """Every turn of the conversation as its memory, by turn id."""
    return {
        turn["id"]: turn_memory(turn, session)
        for session in conversation["sessions"]
        for turn in session["turns"]
    }


def paraphrase_overlap(
    question: str, memories: list[dict], speakers: Sequence[str]
) -> list[tuple[str, str]]:
    """search_eval.shared_words, the speakers' names left out of the question: every turn
    starts with one of them, so they tell nothing about which turn answers."""
    for name in speakers:
        question = re.sub(rf"\b{re.escape(name)}\b", " ", question, flags=re.IGNORECASE)
    return search_eval.shared_words(question, memories)


def check_data(data: dict) -> list[str]:
    """Every broken promise of the data, as sentences: ids not unique, sessions out of date
    order, a turn not `Speaker: text`, unknown evidence, a multi question not on two or three
    turns, a paraphrase question sharing a word with its evidence."""
    problems: list[str] = []
    seen: set[str] = set()
    for conversation in data["conversations"]:
        name = conversation["id"]
        speakers = conversation["speakers"]
        if conversation["split"] not in SPLITS:
            problems.append(f"{name}: split {conversation['split']!r}")
        dates = [session["date"] for session in conversation["sessions"]]
        if dates != sorted(set(dates)):
            problems.append(f"{name}: session dates do not ascend: {dates}")
        for session in conversation["sessions"]:
            for turn in session["turns"]:
                if turn["id"] in seen:
                    problems.append(f"{name}: turn id {turn['id']} twice")
                seen.add(turn["id"])
                if not any(turn["text"].startswith(f"{who}: ") for who in speakers):
                    problems.append(f"{name}: {turn['id']} is not `Speaker: text`")
        memories = turn_memories(conversation)
        asked: set[str] = set()
        for item in conversation["questions"]:
            label = f"{name}: {item['q']!r}"
            if item["q"] in asked:
                problems.append(f"{label} asked twice")
            asked.add(item["q"])
            if item["type"] not in TYPES:
                problems.append(f"{label} has type {item['type']!r}")
            unknown = [key for key in item["evidence"] if key not in memories]
            if unknown or not item["evidence"]:
                problems.append(f"{label} has unknown evidence {unknown}")
                continue
            if item["type"] == "multi" and not 2 <= len(item["evidence"]) <= 3:
                problems.append(f"{label} (multi) has {len(item['evidence'])} evidence turns")
            if item["type"] == "paraphrase":
                evidence = [memories[key] for key in item["evidence"]]
                shared = paraphrase_overlap(item["q"], evidence, speakers)
                if shared:
                    pairs = ", ".join(f"{q}~{m}" for q, m in shared)
                    problems.append(f"{label} shares {pairs} with {item['evidence']}")
    return problems


def totals(data: dict) -> str:
    """One line: conversations per split, sessions, turns, questions per type."""
    conversations = data["conversations"]
    per_split = {split: sum(c["split"] == split for c in conversations) for split in SPLITS}
    sessions = sum(len(c["sessions"]) for c in conversations)
    turns = sum(len(s["turns"]) for c in conversations for s in c["sessions"])
    questions = [q for c in conversations for q in c["questions"]]
    per_type = ", ".join(f"{t} {sum(q['type'] == t for q in questions)}" for t in TYPES)
    splits = ", ".join(f"{count} {split}" for split, count in per_split.items())
    return (
        f"{len(conversations)} conversations ({splits}), {sessions} sessions, {turns:,} turns; "
        f"{len(questions)} questions: {per_type}"
    )


# --- Into minds ---------------------------------------------------------------------------


def load_conversations(data: dict, *, embedder=None) -> list[tuple[object, list[dict], str]]:
    """Each conversation into a new mind, one memory per turn (bulk_create: the search
    index is kept by triggers on both databases), each stored at its session's date; with
    an embedder, every turn's vector as the worker stores it. [(mind, questions, split)]."""
    from django.db import transaction

    from memories.models import Memory, MemoryTag

    loaded = []
    for conversation in data["conversations"]:
        _, mind, _ = common.create_mind(f"Conversation {conversation['id']}")
        memories = []
        for session in conversation["sessions"]:
            # An evening chat: a turn a minute from seven o'clock on the session's date.
            evening = datetime.fromisoformat(session["date"]).replace(hour=19, tzinfo=UTC)
            for index, turn in enumerate(session["turns"]):
                at = evening + timedelta(minutes=index)
                memories.append(
                    Memory(mind=mind, created_at=at, updated_at=at, **turn_memory(turn, session))
                )
        with transaction.atomic():
            Memory.objects.bulk_create(memories, batch_size=500)
            MemoryTag.objects.bulk_create(
                (MemoryTag(memory=m, mind=mind, tag=tag) for m in memories for tag in m.tags),
                batch_size=1000,
            )
        if embedder is not None:
            search_eval.embed_mind(embedder, mind=mind)
        loaded.append((mind, conversation["questions"], conversation["split"]))
    return loaded


# --- Measuring ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    question: dict
    hit: float  # 1.0 when an evidence turn is in the first HIT_AT
    recall: float  # the share of evidence turns in the first DEPTH
    reciprocal: float  # 1/rank of the first evidence turn in the first DEPTH, else 0
    ranked: tuple[str, ...]

    @property
    def type(self) -> str:
        return self.question["type"]


@dataclass(frozen=True)
class Scores:
    hit5: float
    recall10: float
    mrr10: float
    asked: int


def evaluate_conversation(
    method: Callable[..., list[str]], questions: Iterable[dict], *, mind
) -> list[Outcome]:
    """Each question asked of `method(question, mind=mind)`, which returns keys best first."""
    outcomes = []
    for item in questions:
        ranked = tuple(method(item["q"], mind=mind)[:DEPTH])
        evidence = set(item["evidence"])
        rank = next((i for i, key in enumerate(ranked, 1) if key in evidence), None)
        outcomes.append(
            Outcome(
                question=item,
                hit=1.0 if rank is not None and rank <= HIT_AT else 0.0,
                recall=len(evidence.intersection(ranked)) / len(evidence),
                reciprocal=1 / rank if rank else 0.0,
                ranked=ranked,
            )
        )
    return outcomes


def summary(outcomes: Sequence[Outcome]) -> Scores:
    asked = len(outcomes)
    if not asked:
        return Scores(float("nan"), float("nan"), float("nan"), 0)
    return Scores(
        hit5=sum(o.hit for o in outcomes) / asked,
        recall10=sum(o.recall for o in outcomes) / asked,
        mrr10=sum(o.reciprocal for o in outcomes) / asked,
        asked=asked,
    )


# --- The section of search_eval.py --------------------------------------------------------


def _cells(scores: Scores) -> str:
    return f"{scores.hit5:7.3f} {scores.recall10:6.3f} {scores.mrr10:7.3f}"


def format_tables(results: dict[tuple[str, str], list[Outcome]], modes: Sequence[str]) -> str:
    """Per mode, then per type and mode: hit@5, R@10 and MRR@10 on dev and held side by side."""
    # Every mode is asked the same questions: the first one's count stands for all.
    asked = {split: len(results[modes[0], split]) for split in SPLITS}
    head = f"{'':22}" + "".join(f"{f'{split} ({asked[split]} q)':^24}" for split in SPLITS)
    columns = f"{'':22}" + f"  {'hit@5':>7} {'R@10':>6} {'MRR@10':>7}" * len(SPLITS)
    lines = [head, columns, "-" * len(columns)]
    for mode in modes:
        cells = "".join(f"  {_cells(summary(results[mode, split]))}" for split in SPLITS)
        lines.append(f"{mode:22}{cells}")
    lines += ["", head, columns, "-" * len(columns)]
    for kind in TYPES:
        for mode in modes:
            cells = ""
            for split in SPLITS:
                chosen = [o for o in results[mode, split] if o.type == kind]
                cells += f"  {_cells(summary(chosen))}"
            lines.append(f"{f'{kind} ({mode})':22}{cells}")
    return "\n".join(lines)


def run(*, verbose: bool = False) -> None:
    """The conversational evaluation, in a process where Django is set up on a migrated
    database (search_eval.py's, or `main`'s)."""

    data = load_data()
    for problem in check_data(data):
        print(f"warning: {problem}", file=sys.stderr)
    print(common.cpu())
    print(totals(data))
    embedder, unavailable = search_eval.load_embedder()
    started = time.perf_counter()
    loaded = load_conversations(data, embedder=embedder)
    vectors = "with vectors" if embedder is not None else "no vectors"
    print(f"loaded into {len(loaded)} minds, {vectors}, in {time.perf_counter() - started:.1f}s")
    modes = MODES if embedder is not None else ("keyword",)
    results: dict[tuple[str, str], list[Outcome]] = {
        (mode, split): [] for mode in modes for split in SPLITS
    }
    for mode in modes:
        method = search_eval.product(mode)
        for mind, questions, split in loaded:
            results[mode, split] += evaluate_conversation(method, questions, mind=mind)
    print(format_tables(results, modes))
    print_recall_about(loaded, results, modes)
    if embedder is None:
        print(f"semantic/hybrid: {unavailable}")
    else:
        print(f"semantic/hybrid: model {getattr(embedder, 'model', '?')}")
    if verbose:
        for mode in modes:
            for split in SPLITS:
                for outcome in results[mode, split]:
                    if not outcome.hit:
                        item = outcome.question
                        print(
                            f"    {mode} {split} miss ({item['type']}): {item['q']!r} wants "
                            f"{item['evidence']}, top 3 {list(outcome.ranked[:3])}"
                        )


def print_recall_about(loaded, results, modes: Sequence[str]) -> None:
    """The share of questions whose evidence (any of its turns) is inside a recall about the
    question of RECALL_BUDGET tokens (GET /memory/recall?about=…&budget=…), beside the share
    whose evidence search's first ten hold, and a recall of the same budget in priority
    order (what an agent gets without `about`)."""
    from bench.recall_about import RECALL_BUDGET, priority_keys, recall_keys

    inside: dict[str, list[float]] = {split: [] for split in SPLITS}
    plain: dict[str, list[float]] = {split: [] for split in SPLITS}
    for mind, questions, split in loaded:
        ordinary = priority_keys(mind, RECALL_BUDGET)
        for item in questions:
            evidence = set(item["evidence"])
            inside[split].append(float(bool(evidence & recall_keys(mind, item["q"]))))
            plain[split].append(float(bool(evidence & ordinary)))

    def share(values: list[float]) -> str:
        return f"{sum(values) / max(len(values), 1):7.3f}"

    print(
        f"\nevidence inside a {RECALL_BUDGET:,}-token recall" + "".join(f"{s:>9}" for s in SPLITS)
    )
    print(f"{'  recall about the question':34}" + "".join(f"  {share(inside[s])}" for s in SPLITS))
    print(f"{'  recall in priority order':34}" + "".join(f"  {share(plain[s])}" for s in SPLITS))
    for mode in modes:
        found = {s: [float(o.recall > 0) for o in results[mode, s]] for s in SPLITS}
        label = f"  search {mode}, first ten"
        print(f"{label:34}" + "".join(f"  {share(found[s])}" for s in SPLITS))


def main(*, database: str = "sqlite", verbose: bool = False) -> None:
    """`run` on a fresh database of its own."""
    with common.BenchDatabase(database=database):
        run(verbose=verbose)


def print_check(data: dict) -> list[str]:
    """For `search_eval.py --check`: the totals and every broken promise; returns them."""
    problems = check_data(data)
    print(totals(data))
    for problem in problems:
        print(f"    violation: {problem}")
    print(f"{len(problems)} violation(s) of the conversation data's promises")
    return problems
