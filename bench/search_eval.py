"""Search quality on a realistic memory set: hit@3 and MRR@10 for our search and baselines.

    .venv/bin/python bench/search_eval.py [--verbose] [--by-category] [--database postgres]
    .venv/bin/python bench/search_eval.py --check
    .venv/bin/python bench/search_eval.py --set conversation   # bench/conversation_eval.py
    .venv/bin/python bench/search_eval.py --set multilingual [--check]   # multilingual_eval.py

Loads bench/search_eval_data.json (one person's memories across all eight categories, a few
of them in German, and questions an agent would ask, each with the key(s) that answer it)
into a fresh, migrated SQLite database in a temp directory, then asks every question of
three sets, printed side by side:

- existing:      `questions`, phrased the way people ask, often with a word of the memory;
- paraphrase en: `paraphrase_questions` with lang "en", each sharing no meaningful word with
                 the memory it asks for (key, content and tags): the agent's own words;
- paraphrase de: the same kind of questions in German, about the same (mostly English) memories.

Every question is asked these ways in the same run:

- ours:        memory_search(mode="keyword"), the code behind GET /memory/search?mode=keyword;
- all-words:   FTS5 with every word of the question required (implicit AND, each word
               quoted), ranked by plain bm25: what a naive "just MATCH the input" gives;
- content-any: any word (OR, all words, quoted) over the content column only, plain bm25:
               our any-word idea without the key/tags columns, weights or stop words;
- ours with other bm25 column weights (key/tags/content), the ablation behind the choice;
- semantic:    memory_search(mode="semantic"), over the vectors the embedding worker's own
               code stores (outbox.embed_pending, run here in this process);
- hybrid:      memory_search(mode="hybrid"), the default of GET /memory/search;
- tried:       what was measured before choosing the fusion in memories/search/semantic.py,
               computed here: the bare cosine ranking with no floor, reciprocal rank fusion
               (k=60) of ours and it over the top 50 of each, and min-max normalised score
               fusion with meaning weighted 0.3 over the same lists.

These appear only when embeddings are on (SYNAPSE_EMBEDDINGS is not `off`), with two lines
more: how many results hybrid search adds by meaning alone per question, with the rule that
such a memory stand semantic.MEANING_STANDING above the closest ones and without it.

A question "hits at 3" when one of its expected keys is among the first three results;
MRR@10 averages 1/rank of the first expected key in the first ten (0 when absent).
Nothing is asserted; the numbers are printed beside each other. Every run first checks the
paraphrase promise (`--check` does only that, exiting 1 on a violation): no content word of
a paraphrase question may match a word of its expected memories (see `shared_words`).
`--database postgres` measures ours, semantic and hybrid on a throwaway PostgreSQL database
(the baselines and weight ablations are FTS5 queries, SQLite only).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, multilingual_eval

DATA = Path(__file__).with_name("search_eval_data.json")
LANGS = ("en", "de")

# --- The paraphrase promise: no meaningful word shared with the memory asked for -------------

# The check's own stop lists, independent of the search's, so that changing what the search
# drops does not change which questions count as paraphrases.
_ENGLISH_STOP = """
    a am an as at be by do he if in is it me my no of on or so to up us we
    about above after again against all also and any are aren because been before being
    below between both but can cannot could couldn did didn does doesn doing don down during
    each few for from further had hadn has hasn have haven having her here hers herself him
    himself his how into isn its itself just let may might more most must mustn myself needn
    nor not now off once only other our ours ourselves out over own same shall she should
    shouldn some such than that the their theirs them themselves then there these they this
    those through too under until very was wasn were weren what when where which while who
    whom why will with won would wouldn you your yours yourself yourselves
"""
_GERMAN_STOP = """
    aber als also auch auf aus bei beim bin bis bist das dem den der des die dies diese
    dieser dieses doch dort durch ein eine einem einen einer eines einmal etwas euch euer
    fur gegen hab habe haben hat hatte ich ihm ihn ihnen ihr ihre ist jetzt kann kannst
    konnen man mein meine meinen meiner mich mir mit muss nach nicht noch nur oder ohne
    schon sehr sein seine seinem seinen seiner seines sich sie sind soll sollen sollte
    uber und uns unser vom von vor war waren warum was weil welche welchem welchen welcher
    welches wen wenn wer werden wie wir wird wo woran worauf zum zur zwischen
"""
# Spanish, Portuguese, Swedish and Dutch: for the multilingual set (bench/multilingual_eval.py).
PARAPHRASE_STOP_WORDS = (
    frozenset((_ENGLISH_STOP + _GERMAN_STOP).split()) | multilingual_eval.STOP_WORDS
)


def _fold(text: str) -> str:
    """Lower-case without diacritics: "Schäfer" and "schafer", "Büro" and "buro" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def content_words(text: str) -> set[str]:
    """Words of more than two letters outside the stop lists; adjacent pairs joined too, so
    "time zone" meets "timezone" and "co-working" meets "coworking" (key underscores split).
    The short words in the stop lists only keep pairs like "in munich" from being joined."""
    tokens = [t for t in re.findall(r"[a-z0-9]+", _fold(text)) if t not in PARAPHRASE_STOP_WORDS]
    joined = [first + second for first, second in itertools.pairwise(tokens)]
    return {word for word in tokens + joined if len(word) > 2}


def crude_stem(word: str) -> str:
    """The first five letters, after a plural "s" and a final "y": queries/query, cats/cat."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("y"):
        word = word[:-1] + "i"
    return word[:5]


def same_word(a: str, b: str) -> bool:
    """One crude stem, or one word starting the other (run/running, app/application)."""
    shorter, longer = sorted((a, b), key=len)
    return crude_stem(a) == crude_stem(b) or longer.startswith(shorter)


def memory_words(memory: dict) -> set[str]:
    return content_words(" ".join([memory["key"], memory["content"], *memory["tags"]]))


def shared_words(question: str, memories: list[dict]) -> list[tuple[str, str]]:
    """(question word, memory word) pairs that count as one word: a paraphrase has none.
    One pair per question word, the shortest memory word it meets."""
    theirs = sorted(set().union(*(memory_words(m) for m in memories)), key=lambda w: (len(w), w))
    pairs = (
        (q, next((m for m in theirs if same_word(q, m)), None)) for q in content_words(question)
    )
    return sorted((q, m) for q, m in pairs if m is not None)


def check_data(data: dict) -> list[str]:
    """Every violation of the data's promises, as sentences: unknown keys, a language
    outside LANGS, a paraphrase question sharing a word with what it asks for."""
    by_key = {m["key"]: m for m in data["memories"]}
    problems = []
    for name in ("questions", "paraphrase_questions"):
        for item in data.get(name, []):
            unknown = [key for key in item["expected"] if key not in by_key]
            if unknown or not item["expected"]:
                problems.append(f"{name}: {item['q']!r} expects unknown key(s) {unknown}")
                continue
            if name == "questions":
                continue
            if item.get("lang") not in LANGS:
                problems.append(f"{name}: {item['q']!r} has lang {item.get('lang')!r}")
            shared = shared_words(item["q"], [by_key[key] for key in item["expected"]])
            if shared:
                pairs = ", ".join(f"{q}~{m}" for q, m in shared)
                problems.append(f"{name}: {item['q']!r} shares {pairs} with {item['expected']}")
    return problems


def paraphrase_counts(data: dict) -> dict[str, dict[str, int]]:
    """Paraphrase questions per language and category (of the first expected memory)."""
    category = {m["key"]: m["category"] for m in data["memories"]}
    counts: dict[str, dict[str, int]] = {lang: {} for lang in LANGS}
    for item in data["paraphrase_questions"]:
        per_lang = counts.setdefault(str(item.get("lang")), {})
        first = category.get(item["expected"][0], "unknown") if item["expected"] else "unknown"
        per_lang[first] = per_lang.get(first, 0) + 1
    return counts


# --- Ways to search by keyword ---------------------------------------------------------------


def quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def words_of(question: str) -> list[str]:
    # Only the characters FTS5 would tokenize anyway; quotes are doubled by quoted().
    return [w for w in question.split() if any(ch.isalnum() for ch in w)]


def fts_baseline(expression: str, *, mind_id: str, limit: int = 10) -> list[str]:
    from django.db import connection

    from memories.search.sqlite import FTS_TABLE, mind_token

    sql = (
        f"SELECT m.key FROM {FTS_TABLE} CROSS JOIN memories_memory AS m "
        f"ON m.rowid = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH %s AND m.mind_id = %s "
        f"ORDER BY bm25({FTS_TABLE}) LIMIT %s"
    )
    full = f'mind_id : "{mind_token(mind_id)}" AND ({expression})'
    with connection.cursor() as cursor:
        cursor.execute(sql, [full, mind_id, limit])
        return [row[0] for row in cursor.fetchall()]


def all_words(question: str, *, mind) -> list[str]:
    terms = " ".join(quoted(w) for w in words_of(question))
    return fts_baseline(f"{{key tags content}} : ({terms})", mind_id=mind.pk)


def content_any(question: str, *, mind) -> list[str]:
    terms = " OR ".join(quoted(w) for w in words_of(question))
    return fts_baseline(f"content : ({terms})", mind_id=mind.pk)


def ours(question: str, *, mind) -> list[str]:
    from memories.search import memory_search

    hits = memory_search(mind=mind, q=question, limit=10, mode="keyword").hits
    return [hit.memory.key for hit in hits]


def with_weights(weights: dict[str, float]) -> Callable:
    """`ours` with other bm25 column weights: the ablation behind the chosen ones."""

    def method(question: str, *, mind) -> list[str]:
        from memories.search import sqlite

        chosen = sqlite.WEIGHTS
        sqlite.WEIGHTS = weights
        try:
            return ours(question, mind=mind)
        finally:
            sqlite.WEIGHTS = chosen

    return method


# --- By meaning: semantic and hybrid, when memories.embeddings exists -----------------------

FUSION_DEPTH = 50  # each ranking fused is cut to its top 50
RRF_K = 60
MEANING_WEIGHT = 0.3  # for the min-max score fusion


def load_embedder() -> tuple[object | None, str]:
    """(embedder, "") or (None, why the meaning columns are not measured)."""
    from memories.embeddings import get_embedder
    from memories.embeddings.errors import EmbeddingsError

    try:
        embedder = get_embedder()
    except EmbeddingsError as exc:
        return None, f"not available (the embedder failed to load: {exc})"
    if embedder is None:
        return None, "not available (embeddings are off)"
    return embedder, ""


def ours_scored(question: str, *, mind) -> list[tuple[str, float]]:
    from memories.search import memory_search

    hits = memory_search(mind=mind, q=question, limit=FUSION_DEPTH, mode="keyword").hits
    return [(hit.memory.key, hit.score) for hit in hits]


def embed_mind(embedder, *, mind) -> int:
    """Give every memory of the mind its vector as the server does: queue those without a
    vector of the model, then run the worker's batches here. The number stored."""
    from memories.embeddings import outbox

    outbox.queue_missing(model=embedder.model, mind_id=mind.pk)
    return outbox.embed_pending(embedder=embedder, mind_id=mind.pk)


def memory_minds(memories: list[dict], *, name: str = "Eval") -> tuple:
    """(the mind holding `memories`, another mind holding the same with each content
    reversed), in the current bench database: another mind's texts must neither show up nor
    change the order."""
    from memories.models import Memory

    _, mind, _ = common.create_mind(name)
    _, other, _ = common.create_mind("Someone else")
    for item in memories:
        Memory.objects.create(mind=mind, **item)
        Memory.objects.create(mind=other, **{**item, "content": item["content"][::-1]})
    return mind, other


def product(mode: str) -> Callable:
    """memory_search in `mode`: what GET /memory/search?mode=… answers."""

    def method(question: str, *, mind) -> list[str]:
        from memories.search import memory_search

        hits = memory_search(mind=mind, q=question, limit=10, mode=mode).hits
        return [hit.memory.key for hit in hits]

    return method


class Meaning:
    """The mind's memories embedded once; per question, the rankings of the fusions tried."""

    def __init__(self, embedder, *, mind):
        from memories.embeddings.text import embedding_text  # what the worker embeds
        from memories.models import Memory

        self.embedder = embedder
        memories = list(Memory.objects.filter(mind=mind).order_by("key"))
        self.keys = [memory.key for memory in memories]
        self.matrix = embedder.embed_documents([embedding_text(m) for m in memories])
        self.queries: dict[str, object] = {}

    def semantic_scored(self, question: str) -> list[tuple[str, float]]:
        if question not in self.queries:
            self.queries[question] = self.embedder.embed_query(question)
        scores = self.matrix @ self.queries[question]  # cosine: both sides L2-normalised
        order = (-scores).argsort(kind="stable")[:FUSION_DEPTH]
        return [(self.keys[i], float(scores[i])) for i in order]

    def semantic(self, question: str, *, mind) -> list[str]:
        return [key for key, _ in self.semantic_scored(question)]

    def hybrid(self, question: str, *, mind) -> list[str]:
        """Reciprocal rank fusion: each list adds 1/(k + rank); ties keep keyword order."""
        fused: dict[str, float] = {}
        for ranking in (ours_scored(question, mind=mind), self.semantic_scored(question)):
            for rank, (key, _) in enumerate(ranking, 1):
                fused[key] = fused.get(key, 0.0) + 1 / (RRF_K + rank)
        return sorted(fused, key=lambda key: -fused[key])

    def hybrid_minmax(self, question: str, *, mind) -> list[str]:
        """Each list's scores min-max normalised to [0, 1], then weighted; absent counts 0."""
        keyword = normalised(ours_scored(question, mind=mind))
        meaning = normalised(self.semantic_scored(question))
        fused = {
            key: (1 - MEANING_WEIGHT) * keyword.get(key, 0.0)
            + MEANING_WEIGHT * meaning.get(key, 0.0)
            for key in {**keyword, **meaning}
        }
        return sorted(fused, key=lambda key: (-fused[key], key))


def normalised(scored: list[tuple[str, float]]) -> dict[str, float]:
    if not scored:
        return {}
    low, high = min(s for _, s in scored), max(s for _, s in scored)
    return {key: (s - low) / (high - low) if high > low else 1.0 for key, s in scored}


# --- Measuring ----------------------------------------------------------------------------


def evaluate(method: Callable, questions: list[dict], *, mind) -> tuple[float, float, list]:
    hits, reciprocal, misses = 0, 0.0, []
    for item in questions:
        ranked = method(item["q"], mind=mind)
        expected = set(item["expected"])
        rank = next((i for i, key in enumerate(ranked[:10], 1) if key in expected), None)
        if rank is not None and rank <= 3:
            hits += 1
        else:
            misses.append((item["q"], item["expected"], ranked[:3]))
        reciprocal += 1 / rank if rank else 0.0
    asked = max(len(questions), 1)
    return hits / asked, reciprocal / asked, misses


def question_sets(data: dict) -> list[tuple[str, list[dict]]]:
    paraphrases = data["paraphrase_questions"]
    return [
        ("existing", data["questions"]),
        *(
            (f"paraphrase {lang}", [q for q in paraphrases if q.get("lang") == lang])
            for lang in LANGS
        ),
    ]


def print_check(data: dict, problems: list[str]) -> None:
    counts = paraphrase_counts(data)
    for lang, per_category in counts.items():
        listed = ", ".join(f"{c} {per_category.get(c, 0)}" for c in common.CATEGORIES)
        print(f"paraphrase {lang}: {sum(per_category.values())} questions ({listed})")
    for problem in problems:
        print(f"    violation: {problem}")
    print(f"{len(problems)} violation(s) of the data's promises")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list the questions missed")
    parser.add_argument(
        "--by-category", action="store_true", help="hit@3 per category of each method"
    )
    parser.add_argument(
        "--check", action="store_true", help="only check the data (exit 1 on a violation)"
    )
    parser.add_argument("--database", choices=common.DATABASES, default="sqlite")
    parser.add_argument(
        "--set",
        choices=("memories", "conversation", "multilingual", "all"),
        default="memories",
        help="the memory set (default), the chat logs of bench/conversation_eval.py, the "
        "languages of bench/multilingual_eval.py, or the memory set and the chat logs",
    )
    args = parser.parse_args()
    from bench import conversation_eval

    if args.set == "multilingual":
        if args.check:
            sys.exit(multilingual_eval.check())
        multilingual_eval.run(database=args.database, verbose=args.verbose)
        return
    if args.set == "conversation":
        if args.check:
            sys.exit(1 if conversation_eval.print_check(conversation_eval.load_data()) else 0)
        conversation_eval.main(database=args.database, verbose=args.verbose)
        return
    data = json.loads(DATA.read_text())
    problems = check_data(data)
    if args.check:
        print_check(data, problems)
        if args.set == "all":
            problems += conversation_eval.print_check(conversation_eval.load_data())
        sys.exit(1 if problems else 0)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)

    with common.BenchDatabase(database=args.database):
        mind, other = memory_minds(data["memories"])

        methods = [
            ("ours", ours),
            ("all-words AND", all_words),
            ("content-only OR", content_any),
            ("ours, weights 1/1/1", with_weights({"key": 1.0, "tags": 1.0, "content": 1.0})),
            ("ours, weights 4/3/1", with_weights({"key": 4.0, "tags": 3.0, "content": 1.0})),
        ]
        if args.database != "sqlite":
            methods = methods[:1]
        embedder, unavailable = load_embedder()
        if embedder is not None:
            for each in (mind, other):
                embed_mind(embedder, mind=each)
            meaning = Meaning(embedder, mind=mind)
            methods += [
                ("semantic", product("semantic")),
                ("hybrid", product("hybrid")),
                ("tried: cosine, no floor", meaning.semantic),
                (f"tried: RRF k={RRF_K}", meaning.hybrid),
                (f"tried: min-max {MEANING_WEIGHT}", meaning.hybrid_minmax),
            ]

        sets = question_sets(data)
        print(
            f"{len(data['memories'])} memories (8 categories); questions: "
            + ", ".join(f"{name} {len(questions)}" for name, questions in sets)
        )
        print(f"{'':22}" + "".join(f"{name:>18}" for name, _ in sets))
        print(f"{'method':22}" + f"{'hit@3':>10} {'MRR@10':>7}" * len(sets))
        for name, method in methods:
            results = [evaluate(method, questions, mind=mind) for _, questions in sets]
            print(f"{name:22}" + "".join(f"{hit3:10.3f} {mrr:7.3f}" for hit3, mrr, _ in results))
            if args.by_category:
                print_by_category(method, sets, data, mind=mind)
            if args.verbose:
                for (set_name, _), (_, _, misses) in zip(sets, results, strict=True):
                    for q, expected, got in misses:
                        print(f"    {set_name} miss: {q!r} wants {expected}, top 3 {got}")
        if embedder is None:
            print(f"semantic/hybrid: {unavailable}")
        else:
            print(
                f"semantic/hybrid: model {getattr(embedder, 'model', '?')}, "
                "documents from memories.embeddings.text.embedding_text"
            )
            print_meaning_alone(sets, mind=mind)
        for set_name, questions in sets[1:]:
            found = keyword_finds_expected(questions, mind=mind)
            print(
                f"{set_name}: ours matches an expected memory at all for {len(found)} question(s)"
            )
            for q in found:
                print(f"    matched: {q!r} (a shared word the check misses?)")
        if args.set == "all":
            print("\n--- conversations (bench/conversation_eval.py) ---")
            conversation_eval.run(verbose=args.verbose)


def meaning_alone(questions: list[dict], *, mind) -> float:
    """How many results hybrid search adds by meaning alone per question, on average (the
    first 100: a question's whole answer here)."""
    from memories.search import memory_search

    added = 0
    for item in questions:
        hits = memory_search(mind=mind, q=item["q"], limit=100, mode="hybrid").hits
        added += sum(hit.match == "meaning" for hit in hits)
    return added / max(len(questions), 1)


def print_meaning_alone(sets: list, *, mind) -> None:
    """Results found by meaning alone per question (hybrid), with semantic.MEANING_STANDING and
    without it (every one of the closest then qualifies): what the standing rule leaves out."""
    from memories.search import semantic

    bar = semantic.MEANING_STANDING
    counts = {}
    for label, value in ((f"by meaning, standing {bar}", bar), ("by meaning, any", -1e9)):
        semantic.MEANING_STANDING = value
        try:
            counts[label] = [meaning_alone(questions, mind=mind) for _, questions in sets]
        finally:
            semantic.MEANING_STANDING = bar
    for label, per_set in counts.items():
        cells = "".join(f"{count:18.1f}" for count in per_set)
        print(f"{label:22}{cells}")


def keyword_finds_expected(questions: list[dict], *, mind) -> list[str]:
    """The questions whose expected memory keyword search matches at any rank: the check's
    promise seen through the engine's own tokenizer, stemmer and stop words."""
    from memories.search import MAX_LIMIT, memory_search

    found = []
    for item in questions:
        hits = memory_search(mind=mind, q=item["q"], limit=MAX_LIMIT, mode="keyword").hits
        keys = {hit.memory.key for hit in hits}
        if keys & set(item["expected"]):
            found.append(item["q"])
    return found


def print_by_category(method: Callable, sets: list, data: dict, *, mind) -> None:
    category = {m["key"]: m["category"] for m in data["memories"]}
    for set_name, questions in sets:
        cells = []
        for name in common.CATEGORIES:
            chosen = [q for q in questions if category[q["expected"][0]] == name]
            if chosen:
                hit3, _, _ = evaluate(method, chosen, mind=mind)
                cells.append(f"{name} {hit3:.2f}")
        print(f"    {set_name:14} hit@3 " + ", ".join(cells))


if __name__ == "__main__":
    main()
