"""Search quality across languages: hit@3 and MRR@10 for questions in Spanish, Portuguese,
Swedish, Dutch and German, about English memories and about memories written in each language.

    .venv/bin/python bench/search_eval.py --set multilingual [--verbose] [--database postgres]
    .venv/bin/python bench/search_eval.py --set multilingual --check

bench/multilingual_eval_data.json was written for this project (licence: the project's own).
For each language of LANGS it holds:

- memories: most of the 64 memories of bench/search_eval_data.json, each written as an agent
  working in that language would store it (its own words, its own snake_case keys and tags;
  names of people, places and products kept), with the English key it renders (`en_key`);
- questions_about_english: questions in that language answered by one of the 64 English
  memories (`expected`: English keys);
- questions_about_own: questions in that language answered by one of that language's
  memories (`expected`: that language's keys).

Every question is a paraphrase, as in search_eval.py's paraphrase set: it shares no
meaningful word with the memories it asks for (key, content and tags), whatever the
language (search_eval.shared_words, with the stop lists below added to its own), and is
written as a person asks an agent, never reworded because a model misses it. Each
question has a `split`: the third, sixth, ninth… question of each list, in file order, is
"held", the others "dev", a rule fixed before anything was measured. A choice (a model, a
fusion, a threshold) is made on dev; held is only for checking that choice afterwards,
never for tuning.

One database holds the 64 English memories in one mind (with their reversed twins in
another, which must neither show up nor change the order, as in search_eval.py) and one
mind per language with that language's memories. With embeddings on, every mind gets its
vectors as the worker would (search_eval.embed_mind). Each question is asked of the mind
holding its answer with memory_search(limit=10) in keyword, semantic and hybrid mode (the
last two only with embeddings on). Printed per mode: hit@3 and MRR@10 per language and
direction, dev and held side by side, and search_eval_data.json's English paraphrase set
as the reference row. `evaluate_multilingual(method)` computes the same figures for any
method(question, mind=...) -> keys, for fusion and model experiments.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

DATA = Path(__file__).with_name("multilingual_eval_data.json")
LANGS = ("es", "pt", "sv", "nl", "de")
LANGUAGE_NAMES = {
    "es": "Spanish",
    "pt": "Portuguese",
    "sv": "Swedish",
    "nl": "Dutch",
    "de": "German",
}
# Which memories a list of questions asks about: the English set, or the language's own.
DIRECTIONS = {"english": "questions_about_english", "own": "questions_about_own"}
SPLITS = ("dev", "held")
HELD_EVERY = 3  # the third, sixth, ninth… question of each list is held out
MIN_QUESTIONS = 15  # per language and direction
MIN_MEMORIES = 40  # per language
MODES = ("keyword", "semantic", "hybrid")
# A key as an agent writes one: ASCII snake_case (stricter than memories.rules.clean_key).
KEY_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")

# --- The paraphrase check's stop lists for these languages -----------------------------------

# Folded as search_eval._fold folds (lower case, no diacritics); search_eval adds them to its
# English and German ones. Function words only: articles, pronouns, prepositions,
# conjunctions, question words and the auxiliaries the English list holds too.
_SPANISH_STOP = """
    a al de e el en la le lo me mi ni no o os se si su te tu u un y ya yo
    ahora algun alguna algunas alguno algunos ante antes aqui asi aun bajo cada como con
    contra cual cuales cualquier cuando cuanta cuantas cuanto cuantos debe deben deberia
    debo del desde despues donde durante ella ellas ellos entre era eran eres esa esas ese
    eso esos esta estaba estan estar estas este esto estos estoy fue fueron hace hacen hacer
    hago han has hasta hay hizo las les los mis muy nos nosotros otra otras otro otros para
    pero por porque puede pueden puedo que quien quienes sea ser sido sin sobre soy sus suya
    suyo tambien tan tener tengo tiene tienen tus una unas uno unos usted ustedes
"""
_PORTUGUESE_STOP = """
    a ao as da de do e em eu ha ja la me na no o os ou se te um
    agora antes aos aquela aquele aqui ate cada com como contra das dela dele deles depois
    deve devem deveria devo dos ela elas ele eles entre era eram essa essas esse esses esta
    estao estar estas este estes faz fazer fez foi foram isso isto lhe lhes mais mas meu
    meus minha minhas muito nao nem nos nossa nosso num numa onde para pela pelas pelo pelos
    pode podem por porque posso quais qual quando quanta quantas quanto quantos que quem sem
    ser seu seus sobre sua suas tambem tem tenho ter teu tua uma umas uns voce voces
"""
_SWEDISH_STOP = """
    an ar at av da de du en ha i ja nu om pa sa ut vi
    alla allt att bara blev bli borde dem den denna deras dess det detta dig din dina ditt
    efter eftersom eller ett far finns for fran gjorde gor hade han hans har henne hennes
    hon honom hur icke inte jag kan man maste med mellan men mer mig min mina mitt mot
    mycket nagon nagot nagra nar och over sedan sig sin sina sitt ska skall skulle som till
    under upp utan vad var vara varfor vart vem vid vilka vilken vilket
"""
_DUTCH_STOP = """
    al de en er ik in is je me na nu of om op te u uw we ze zo
    aan alle als ben bij dan dat deze die dit doe doen doet door dus een eens gaat geen haar
    had hadden heb hebben heeft hem het hier hij hoe hoeveel hun jij jou jouw kan kon kun
    kunnen maar mag meer men met mij mijn moet moeten naar niet nog omdat onder ons onze ook
    over tegen toch tot uit van veel voor waar waaraan waarin waarmee waarom waarop waarover
    waarvoor wanneer want was wat welk welke werd wie wij worden wordt zal zelf zich zij
    zijn zonder zou zouden
"""
STOP_WORDS = frozenset((_SPANISH_STOP + _PORTUGUESE_STOP + _SWEDISH_STOP + _DUTCH_STOP).split())


# --- The data and its promises ----------------------------------------------------------------


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())


def load_english() -> dict[str, Any]:
    from bench import search_eval

    return json.loads(search_eval.DATA.read_text())


def questions_of(data: dict, lang: str, direction: str) -> list[dict]:
    return data["languages"][lang][DIRECTIONS[direction]]


def memories_asked(data: dict, english: dict, lang: str, direction: str) -> list[dict]:
    """The memories a list of questions asks about: the English set or the language's own."""
    return english["memories"] if direction == "english" else data["languages"][lang]["memories"]


def expected_split(position: int) -> str:
    """The split of the question at `position` (from 1) of its list: the fixed rule."""
    return "held" if position % HELD_EVERY == 0 else "dev"


def check_data(data: dict, english: dict) -> list[str]:
    """Every violation of the set's promises, as sentences: memories that are no rendering
    of an English one, keys or tags an agent could not store, unknown expected keys, splits
    off the rule, too few questions or categories, and paraphrase questions sharing a word
    with what they ask for."""
    from bench import search_eval

    by_english_key = {m["key"]: m for m in english["memories"]}
    problems = []
    if sorted(data["languages"]) != sorted(LANGS):
        problems.append(f"languages {sorted(data['languages'])}, expected {sorted(LANGS)}")
    for lang in LANGS:
        if lang not in data["languages"]:
            continue
        memories = data["languages"][lang]["memories"]
        problems += [f"{lang}: {p}" for p in _memory_problems(memories, by_english_key)]
        for direction in DIRECTIONS:
            where = f"{lang} {DIRECTIONS[direction]}"
            by_key = {m["key"]: m for m in memories_asked(data, english, lang, direction)}
            questions = questions_of(data, lang, direction)
            if len(questions) < MIN_QUESTIONS:
                problems.append(f"{where}: {len(questions)} questions, fewer than {MIN_QUESTIONS}")
            asked = {
                by_key[key]["category"]
                for q in questions
                for key in q["expected"][:1]
                if key in by_key
            }
            if missing := [c for c in common.CATEGORIES if c not in asked]:
                problems.append(f"{where}: no question about {', '.join(missing)}")
            for position, item in enumerate(questions, 1):
                unknown = [key for key in item["expected"] if key not in by_key]
                if unknown or not item["expected"]:
                    problems.append(f"{where}: {item['q']!r} expects unknown key(s) {unknown}")
                    continue
                if item.get("split") != expected_split(position):
                    problems.append(
                        f"{where}: {item['q']!r} (question {position}) has split "
                        f"{item.get('split')!r}, the rule gives {expected_split(position)!r}"
                    )
                shared = search_eval.shared_words(item["q"], [by_key[k] for k in item["expected"]])
                if shared:
                    pairs = ", ".join(f"{q}~{m}" for q, m in shared)
                    problems.append(
                        f"{where}: {item['q']!r} shares {pairs} with {item['expected']}"
                    )
    return problems


def _memory_problems(memories: list[dict], by_english_key: dict[str, dict]) -> list[str]:
    problems = []
    if len(memories) < MIN_MEMORIES:
        problems.append(f"{len(memories)} memories, fewer than {MIN_MEMORIES}")
    if missing := [c for c in common.CATEGORIES if c not in {m["category"] for m in memories}]:
        problems.append(f"no memory of category {', '.join(missing)}")
    for name in ("key", "en_key"):
        seen = [m[name] for m in memories]
        if dupes := sorted({k for k in seen if seen.count(k) > 1}):
            problems.append(f"{name} used twice: {dupes}")
    for memory in memories:
        original = by_english_key.get(memory["en_key"])
        if original is None:
            problems.append(f"{memory['key']}: en_key {memory['en_key']!r} is no English key")
        elif memory["category"] != original["category"]:
            problems.append(f"{memory['key']}: category differs from {memory['en_key']}'s")
        if not KEY_PATTERN.fullmatch(memory["key"]):
            problems.append(f"{memory['key']!r} is not an ASCII snake_case key")
        tags = memory["tags"]
        if (
            not tags
            or any(t != t.strip().lower() or not t for t in tags)
            or len(set(tags)) < len(tags)
        ):
            problems.append(f"{memory['key']}: tags {tags} are not trimmed, lower-case, distinct")
    return problems


def print_check(data: dict, problems: list[str]) -> None:
    for lang in (lang for lang in LANGS if lang in data["languages"]):
        memories = data["languages"][lang]["memories"]
        counts = []
        for direction, field in DIRECTIONS.items():
            questions = data["languages"][lang][field]
            held = sum(q.get("split") == "held" for q in questions)
            counts.append(f"{len(questions)} about {direction} memories ({held} held)")
        print(f"{lang}: {len(memories)} memories; questions: " + ", ".join(counts))
    for problem in problems:
        print(f"    violation: {problem}")
    print(f"{len(problems)} violation(s) of the multilingual set's promises")


# --- The minds and the measuring --------------------------------------------------------------


@dataclass
class Score:
    hit3: float
    mrr: float
    asked: int
    misses: list[tuple[str, list[str], list[str]]]


# (language of the questions, direction, split); the reference row is ("en", "english", "all").
Row = tuple[str, str, str]
REFERENCE: Row = ("en", "english", "all")


def load_minds(data: dict, english: dict, *, embedder: object | None = None) -> dict[str, Any]:
    """In the current (bench) database: a mind with the English memories and their reversed
    twins in another mind, and one mind per language; vectors when `embedder` is given.
    Returns the minds by language code, "en" for the English one."""
    from bench import search_eval
    from memories.models import Memory

    mind, other = search_eval.memory_minds(english["memories"], name="Eval en")
    minds = {"en": mind}
    for lang in LANGS:
        _, minds[lang], _ = common.create_mind(f"Eval {lang}")
        for memory in data["languages"][lang]["memories"]:
            fields = {name: memory[name] for name in ("category", "key", "content", "tags")}
            Memory.objects.create(mind=minds[lang], **fields)
    if embedder is not None:
        for each in [*minds.values(), other]:
            search_eval.embed_mind(embedder, mind=each)
    return minds


def question_groups(data: dict, english: dict) -> dict[Row, tuple[str, list[dict]]]:
    """Every row of the report: (mind's language, its questions), the reference row first."""
    reference = [q for q in english["paraphrase_questions"] if q.get("lang") == "en"]
    groups: dict[Row, tuple[str, list[dict]]] = {REFERENCE: ("en", reference)}
    for lang in LANGS:
        for direction in DIRECTIONS:
            questions = questions_of(data, lang, direction)
            for split in SPLITS:
                chosen = [q for q in questions if q["split"] == split]
                groups[(lang, direction, split)] = (
                    "en" if direction == "english" else lang,
                    chosen,
                )
    return groups


def evaluate_multilingual(
    method: Callable[..., list[str]],
    *,
    minds: dict[str, Any] | None = None,
    data: dict | None = None,
    english: dict | None = None,
) -> dict[Row, Score]:
    """hit@3 and MRR@10 of `method` per row (language, direction, split) and REFERENCE.

    `method(question, mind=...)` returns keys, best first. Call it inside a
    common.BenchDatabase; without `minds` the memories are loaded (and embedded when
    embeddings are on) into that database first."""
    from bench import search_eval

    data = data if data is not None else load()
    english = english if english is not None else load_english()
    if minds is None:
        embedder, _ = search_eval.load_embedder()
        minds = load_minds(data, english, embedder=embedder)
    scores = {}
    for row, (mind_lang, questions) in question_groups(data, english).items():
        hit3, mrr, misses = search_eval.evaluate(method, questions, mind=minds[mind_lang])
        scores[row] = Score(hit3=hit3, mrr=mrr, asked=len(questions), misses=misses)
    return scores


def format_table(scores: dict[Row, Score], *, title: str) -> list[str]:
    """One line per language and direction: dev and held side by side, then both together."""
    blank = f"{'-':>10} {'-':>6}"
    lines = [
        f"{title:38}" + "".join(f"{split:>17}" for split in (*SPLITS, "all")),
        f"{'questions':30}{'asked':>8}" + f"{'hit@3':>10} {'MRR@10':>6}" * 3,
    ]
    ref = scores[REFERENCE]
    label = "en paraphrase set (reference)"
    lines.append(f"{label:30}{ref.asked:>8}" + blank * 2 + _cells(ref.hit3, ref.mrr))
    for lang in LANGS:
        for direction in DIRECTIONS:
            dev, held = scores[(lang, direction, "dev")], scores[(lang, direction, "held")]
            asked = dev.asked + held.asked
            both_hit3 = (dev.hit3 * dev.asked + held.hit3 * held.asked) / max(asked, 1)
            both_mrr = (dev.mrr * dev.asked + held.mrr * held.asked) / max(asked, 1)
            about = "English" if direction == "english" else LANGUAGE_NAMES[lang]
            lines.append(
                f"{lang} about {about:21}{f'{dev.asked}/{held.asked}':>8}"
                + _cells(dev.hit3, dev.mrr)
                + _cells(held.hit3, held.mrr)
                + _cells(both_hit3, both_mrr)
            )
    return lines


def _cells(hit3: float, mrr: float) -> str:
    return f"{hit3:10.3f} {mrr:6.3f}"


def run(*, database: str = "sqlite", verbose: bool = False) -> None:
    """What `search_eval.py --set multilingual` prints."""
    from bench import search_eval

    data, english = load(), load_english()
    for problem in check_data(data, english):
        print(f"warning: {problem}", file=sys.stderr)
    print(common.cpu())
    with common.BenchDatabase(database=database):
        embedder, unavailable = search_eval.load_embedder()
        minds = load_minds(data, english, embedder=embedder)
        sizes = ", ".join(f"{lang} {len(data['languages'][lang]['memories'])}" for lang in LANGS)
        print(f"{len(english['memories'])} English memories; per language: {sizes}")
        modes = MODES if embedder is not None else MODES[:1]
        for mode in modes:
            scores = evaluate_multilingual(
                search_eval.product(mode), minds=minds, data=data, english=english
            )
            print()
            print("\n".join(format_table(scores, title=f"memory_search(mode={mode!r})")))
            if verbose:
                for (lang, direction, split), score in scores.items():
                    for q, expected, got in score.misses:
                        print(
                            f"    {lang} {direction} {split} miss: {q!r} wants {expected}, "
                            f"top 3 {got}"
                        )
        print()
        if embedder is None:
            print(f"semantic/hybrid: {unavailable}")
        else:
            print(f"semantic/hybrid: model {getattr(embedder, 'model', '?')}")


def check(data: dict | None = None) -> int:
    """What `search_eval.py --set multilingual --check` prints; 1 on a violation."""
    data = data if data is not None else load()
    english = load_english()
    problems = check_data(data, english)
    print_check(data, problems)
    return 1 if problems else 0
