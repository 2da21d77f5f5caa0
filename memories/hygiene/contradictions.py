"""Contradictions: pairs of live memories that very likely state different values about the
same thing, each with a reason a person can read. No language model needed.

Candidates are pairs close in meaning (the vectors), or sharing a part of their keys, or a
tag and a word, or several words; the judge then looks for what differs (numbers, dates,
names, a negation, opposite words) while the rest of the two texts says the same. An
OpenAI-compatible chat API may confirm each pair (SYNAPSE_HYGIENE_CHAT_URL). Design notes:
docs/internals.md#hygiene-duplicates-and-contradictions.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from memories.hygiene import pairs
from memories.hygiene.lexical import NEGATIONS, fold, similarity, stem, words
from memories.models import HygieneDismissal, Memory
from memories.search.semantic import MindMatrix
from minds.models import Mind

logger = logging.getLogger(__name__)

KIND = HygieneDismissal.Kind.CONTRADICTION
# The window GET /memory/contradictions looks at unless told otherwise.
DEFAULT_WITHIN = timedelta(days=7)
# Chosen on the dev part of bench/contradictions_eval.py (docs/performance.md).
CANDIDATE_COSINE = 0.85
# How many words the rest of two texts (their values taken out) may differ by and still be
# about one thing.
EXTRA_WORDS = 0
MOST_SHARING = 50
SHARED_WORDS = 2
QUOTE_CHARS = 80

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
MONTHS = {m: m for m in _MONTHS} | {m[:3]: m for m in _MONTHS} | {"sept": "september"}
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS = {d: d for d in _DAYS} | {d + "s": d for d in _DAYS}
# Words that say a value replaced another: they join neither side's own words.
CHANGE_WORDS = frozenset(
    stem(w)
    for w in (
        "moved",
        "relocated",
        "changed",
        "switched",
        "now",
        "currently",
        "anymore",
        "longer",
        "instead",
        "since",
        "new",
        "became",
        "replaced",
        "updated",
        "actually",
        "meanwhile",
        "recently",
        "today",
    )
)
# Said of something that ended: as good as a "not".
ENDED = frozenset({"stopped", "quit", "gave", "dropped", "cancelled", "canceled"})
_OPPOSITE_PAIRS = [
    ("tabs", "spaces"),
    ("tab", "space"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("likes", "hates"),
    ("enjoys", "hates"),
    ("prefers", "avoids"),
    ("prefer", "avoid"),
    ("uses", "avoids"),
    ("yes", "no"),
    ("early", "late"),
    ("earlier", "later"),
    ("light", "dark"),
    ("morning", "evening"),
    ("mornings", "evenings"),
    ("morning", "night"),
    ("before", "after"),
    ("true", "false"),
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("allowed", "forbidden"),
    ("always", "never"),
    ("more", "less"),
    ("hot", "cold"),
    ("warm", "cold"),
    ("remote", "onsite"),
    ("remotely", "office"),
    ("single", "married"),
    ("introvert", "extrovert"),
    ("formal", "informal"),
    ("short", "long"),
    ("shorter", "longer"),
    ("open", "closed"),
    ("public", "private"),
    ("accepted", "rejected"),
    ("increase", "decrease"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("daily", "weekly"),
    ("weekly", "monthly"),
    ("daily", "monthly"),
    ("upper", "lower"),
    ("uppercase", "lowercase"),
    ("metric", "imperial"),
    ("celsius", "fahrenheit"),
    ("weekdays", "weekends"),
    ("agree", "disagree"),
    ("online", "offline"),
    ("vegetarian", "meat"),
    ("vegan", "meat"),
    ("left", "right"),
    ("beginner", "expert"),
    ("cheap", "expensive"),
    ("fast", "slow"),
    ("quiet", "loud"),
    ("minimal", "verbose"),
    ("concise", "detailed"),
    ("terse", "detailed"),
    ("first", "last"),
    ("spring", "autumn"),
    ("summer", "winter"),
    ("north", "south"),
    ("east", "west"),
    ("debit", "credit"),
    ("manual", "automatic"),
    ("paper", "digital"),
]
OPPOSITES: dict[str, set[str]] = {}
for _a, _b in _OPPOSITE_PAIRS:
    OPPOSITES.setdefault(_a, set()).add(_b)
    OPPOSITES.setdefault(_b, set()).add(_a)

_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
_DATE = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\.?\s+(?:of\s+)?({_MONTH_RE})\b\.?"
    rf"|\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b"
    r"|\b(\d{4})-(\d{2})-(\d{2})\b"
    r"|\b(\d{1,2})(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\b(\d{1,2}):(\d{2})\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NAME = re.compile(r"\b[A-ZÄÖÜ][\w'-]*\w|\b[a-z]+[A-Z]\w*")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)\s*[\"'(“]?$")
_PLACE_WORDS = frozenset({"in", "at", "to", "from", "near", "moved", "lives", "live"})


@dataclass(frozen=True)
class Values:
    """What a text states, by kind ({kind: {folded value: as written}}), and its other
    words (stemmed, values and change words left out)."""

    found: dict[str, dict[str, str]]
    rest: frozenset[str]
    negated: bool
    words: frozenset[str]


def values_of(text: str) -> Values:
    found: dict[str, dict[str, str]] = {}
    taken: set[str] = set()  # folded words that are part of a value
    spans: list[tuple[int, int]] = []

    def add(kind: str, key: str, shown: str, span: tuple[int, int]) -> None:
        found.setdefault(kind, {}).setdefault(key, shown)
        taken.update(words(shown))
        spans.append(span)

    for match in _DATE.finditer(text):
        if match[5]:
            key = f"{int(match[7])} {_MONTHS[int(match[6]) - 1]}" if 0 < int(match[6]) <= 12 else ""
            key = f"{match[5]} {key}"
        elif match[8]:
            key = f"day {int(match[8])}"
        elif match[1]:
            key = f"{int(match[1])} {MONTHS[match[2].lower()]}"
        else:
            key = f"{int(match[4])} {MONTHS[match[3].lower()]}"
        add("date", key, match[0].strip(" ."), match.span())
    for match in _TIME.finditer(text):
        if _inside(match.span(), spans):
            continue
        if match[3]:
            hour = int(match[1]) % 12 + (12 if match[3].lower() == "pm" else 0)
            key = f"{hour}:{match[2] or '00'}"
        else:
            key = f"{int(match[4])}:{match[5]}"
        add("time", key, match[0], match.span())
    for match in _YEAR.finditer(text):
        if not _inside(match.span(), spans):
            add("year", match[0], match[0], match.span())
    for match in _NUMBER.finditer(text):
        if not _inside(match.span(), spans):
            add("number", match[0].replace(",", "."), match[0], match.span())
    folded = [w for w in re.findall(r"\w+", fold(text))]
    for word in folded:
        if word in WEEKDAYS:
            add("day", WEEKDAYS[word], word, (0, 0))
        elif word in MONTHS and len(word) > 3 and not any(word in d for d in found.get("date", {})):
            add("month", MONTHS[word], word, (0, 0))
    for match in _NAME.finditer(text):
        name = match[0]
        lowered = fold(name)
        if lowered in MONTHS or lowered in WEEKDAYS or lowered in NEGATIONS:
            continue
        if _SENTENCE_START.search(text[: match.start()]) or not words(name):
            continue
        kind = "name"
        before = re.findall(r"\w+", fold(text[: match.start()]))[-1:]
        add(kind, lowered, name, match.span())
        if before and before[0] in _PLACE_WORDS:
            found.setdefault("place", {}).setdefault(lowered, name)
    all_words = words(text)
    negated = any(w in NEGATIONS or w in ENDED for w in folded)
    rest = (
        frozenset(
            stem(w)
            for w in all_words
            if w not in taken and w not in NEGATIONS and w not in ENDED and not w.isdigit()
        )
        - CHANGE_WORDS
    )
    return Values(found, rest, negated, frozenset(all_words))


def _inside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def judge(a: Memory, b: Memory) -> str | None:
    """Why `a` and `b` very likely contradict each other, or None: something differs (a
    value, a "not", opposite words) while the rest of the two texts is the same."""
    va, vb = values_of(a.content), values_of(b.content)
    shared_values = {
        stem(w)
        for kind, found in va.found.items()
        for key in found
        if key in vb.found.get(kind, {})
        for w in words(key)
    }
    topic_a, topic_b = va.rest | shared_values, vb.rest | shared_values
    opposed = [
        (word, other)
        for word in sorted(va.words)
        for other in sorted(OPPOSITES.get(word, ()))
        if other in vb.words and other not in va.words and word not in vb.words
    ]
    if opposed:
        said = {stem(w) for pair in opposed for w in pair}
        if _same_topic(topic_a - said, topic_b - said):
            word, other = opposed[0]
            return f"Opposites: \u201c{word}\u201d / \u201c{other}\u201d"
        return None
    labels_a, labels_b = _labels(a), _labels(b)
    differing = {}
    for kind in ("date", "time", "day", "month", "year", "number", "name"):
        mine, theirs = va.found.get(kind, {}), vb.found.get(kind, {})
        only_a = [k for k in mine if k not in theirs]
        only_b = [k for k in theirs if k not in mine]
        if not (only_a and only_b):
            continue
        # Memories about those values (a key or tag names them): about two different things.
        if any(_named(k, labels_a) for k in only_a) and any(_named(k, labels_b) for k in only_b):
            return None
        differing[kind] = (mine[only_a[0]], theirs[only_b[0]], only_a, only_b)
    if not _same_topic(topic_a, topic_b):
        return None
    if not differing:
        if va.negated != vb.negated:
            negative = a if va.negated else b
            return f"One says not: \u201c{_quote(negative.content)}\u201d"
        return None
    kind = next(iter(differing))
    if kind != "name" and "name" in differing:
        return None  # other names as well: about two different things
    shown_a, shown_b, only_a, only_b = differing[kind]
    if kind == "name" and _placed(only_a, va) and _placed(only_b, vb):
        kind = "place"
    return f"Different {kind}: \u201c{shown_a}\u201d / \u201c{shown_b}\u201d"


def _same_topic(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> bool:
    """The rest of two texts says the same: a shared word, and at most EXTRA_WORDS apart."""
    return bool(a & b) and len(a ^ b) <= EXTRA_WORDS


def _placed(keys: list[str], values: Values) -> bool:
    return any(k in values.found.get("place", {}) for k in keys)


def _labels(memory: Memory) -> set[str]:
    parts = {p for p in memory.key.lower().split("_") if p}
    return parts | {fold(t) for t in memory.tags}


def _named(value: str, labels: set[str]) -> bool:
    return any(word in labels for word in words(value))


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "\u2026"


@dataclass(frozen=True)
class Contradiction:
    a: Memory  # the more recently updated
    b: Memory
    similarity: float  # the cosine where both have vectors, else the lexical similarity
    reason: str


def contradiction_pairs(
    *, mind: Mind, within: timedelta, now: datetime | None = None
) -> list[Contradiction]:
    """Pairs of the mind's live memories that very likely state different values about the
    same thing, at least one of them updated within `within` of `now`, most recent first.
    Pairs a person kept (pair_keep_both) are left out."""
    now = now or timezone.now()
    memories = pairs.live_memories(mind, now)
    by_id = {m.pk: m for m in memories}
    recent = {m.pk for m in memories if m.updated_at >= now - within}
    if not recent:
        return []
    vectors = pairs.mind_vectors(mind.pk)
    cosines = pairs.close_in_meaning(
        vectors, among=by_id, threshold=CANDIDATE_COSINE, rows_of=recent
    )
    texts = pairs.texts(memories)
    keyed = pairs.sharing(
        {m.pk: _key_parts(m) for m in memories}, most=MOST_SHARING, rows_of=recent
    )
    tagged = pairs.sharing({m.pk: m.tags for m in memories}, most=MOST_SHARING, rows_of=recent)
    worded = pairs.sharing(
        {k: t.tokens for k, t in texts.items()}, most=MOST_SHARING, rows_of=recent
    )
    candidates = set(cosines) | set(keyed)
    for candidate, count in worded.items():
        a, b = (by_id[m] for m in candidate)
        if a.category == b.category and (count >= SHARED_WORDS or candidate in tagged):
            candidates.add(candidate)
    kept = pairs.dismissed(mind, KIND)
    found = []
    for candidate in sorted(candidates - kept):
        a, b = sorted(
            (by_id[m] for m in candidate), key=lambda m: (m.updated_at, m.pk), reverse=True
        )
        reason = judge(a, b)
        if reason is None or not confirmed(a, b, reason):
            continue
        cosine = cosines.get(candidate) or _cosine(vectors, candidate)
        score = cosine if cosine is not None else similarity(texts[a.pk], texts[b.pk])
        found.append(Contradiction(a, b, round(score, 4), reason))
    found.sort(key=lambda c: (c.a.updated_at, c.b.updated_at, c.a.pk), reverse=True)
    return found


def _key_parts(memory: Memory) -> set[str]:
    """The words of a key that say what it is about: not the category, not a derived hash."""
    parts = memory.key.lower().split("_")
    if parts and parts[0] == memory.category:
        parts = parts[1:]
    return {
        stem(p)
        for p in parts
        if len(p) > 2 and not any(ch.isdigit() for ch in p) and p not in ("the", "and", "for")
    }


def _cosine(vectors: MindMatrix | None, candidate: pairs.Pair) -> float | None:
    if vectors is None:
        return None
    rows = [vectors.index.get(m) for m in candidate]
    if rows[0] is None or rows[1] is None:
        return None
    return float(vectors.matrix[rows[0]] @ vectors.matrix[rows[1]])


# --- An optional second opinion -----------------------------------------------------------

PROMPT = (
    "Two notes about the same person. Do they state different values about the same thing, "
    "so that both cannot be true now? Answer only yes or no."
)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would replay the key to wherever it points.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def confirmed(a: Memory, b: Memory, reason: str) -> bool:
    """The chat API's yes or no on a candidate, when SYNAPSE_HYGIENE_CHAT_URL names one;
    True without it, and when it fails (the judge's verdict stands)."""
    url = str(getattr(settings, "SYNAPSE_HYGIENE_CHAT_URL", "") or "")
    if not url:
        return True
    body = {
        "model": settings.SYNAPSE_HYGIENE_CHAT_MODEL,
        "temperature": 0,
        "max_tokens": 3,
        "messages": [
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": f"1. {a.content}\n2. {b.content}"},
        ],
    }
    headers = {"Content-Type": "application/json"}
    if settings.SYNAPSE_HYGIENE_CHAT_KEY:
        headers["Authorization"] = f"Bearer {settings.SYNAPSE_HYGIENE_CHAT_KEY}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        opener = urllib.request.build_opener(_NoRedirects())
        with opener.open(request, timeout=settings.SYNAPSE_HYGIENE_CHAT_TIMEOUT) as r:
            answer = json.loads(r.read(65536))["choices"][0]["message"]["content"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        logger.warning("The hygiene chat API did not answer (%s): kept %s", exc, reason)
        return True
    return not str(answer).strip().lower().startswith("no")
