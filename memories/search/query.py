"""User text → a search query that is always safe to hand to the full-text engine.

Phrases, prefixes and exclusions are syntax; everything else is searched as words.
The grammar: README.md#search; design notes: docs/internals.md#the-query-grammar.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
MIN_PREFIX_CHARS = 2

# The columns user terms may match: never the mind-token column (see sqlite.py).
FTS_USER_COLUMNS = "{key tags content}"

# English function words (the NLTK list plus common question contractions). Dropping them
# keeps "what is the user's favourite editor" from ranking by "what" and "the".
_STOP_WORDS_TEXT = """
    a about above after again against ain all am an and any are aren aren't as at be because
    been before being below between both but by can couldn couldn't d did didn didn't do does
    doesn doesn't doing don don't down during each few for from further had hadn hadn't has
    hasn hasn't have haven haven't having he he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn isn't it it'd it'll it's its itself just
    let's ll m ma me might mightn mightn't more most must mustn mustn't my myself needn needn't
    no nor not now o of off on once only or other our ours ourselves out over own re s same
    shan shan't she she'd she'll she's should should've shouldn shouldn't so some such t than
    that that'll that's the their theirs them themselves then there there's these they they'd
    they'll they're they've this those through to too under until up ve very was wasn wasn't
    we we'd we'll we're we've were weren weren't what what's when when's where where's which
    while who who's whom why why's will with won won't would wouldn wouldn't y you you'd
    you'll you're you've your yours yourself yourselves could shall may
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

# A leading "-" marks an exclusion only when a word or phrase follows it directly.
_TOKEN_RE = re.compile(r'(?P<neg>-(?=[^\s-]))?(?:"(?P<phrase>[^"]*)"|(?P<word>[^\s"]+))')
_EDGE_PUNCT_RE = re.compile(r"^[^\w]+|[^\w*]+$")
_POSSESSIVE_RE = re.compile(r"'s$")  # _clean() already made curly apostrophes straight


class SearchQueryError(ValueError):
    """The query cannot be searched; the message says why, for a 400 naming `q`."""


@dataclass(frozen=True)
class Term:
    text: str
    prefix: bool = False

    def fts5(self) -> str:
        """A double-quoted FTS5 string (inner quotes doubled), `*` appended for a prefix."""
        quoted = '"' + self.text.replace('"', '""') + '"'
        if not self.prefix:
            return quoted
        # FTS5 runs the prefix itself through the Porter stemmer, which turns a final "y"
        # into "i": "lazy*" would look for "lazi…" and miss "lazyvim". Also try the prefix
        # without its "y" ("laz*"): a little wider, never narrower.
        shorter = self.text[:-1]
        if self.text.endswith("y") and sum(ch.isalnum() for ch in shorter) >= MIN_PREFIX_CHARS:
            return f"({quoted}* OR {Term(shorter, prefix=True).fts5()})"
        return quoted + "*"


@dataclass(frozen=True)
class ParsedQuery:
    required: tuple[Term, ...] = ()  # quoted phrases: every one must match
    optional: tuple[Term, ...] = ()  # plain words: any may match, more is better
    excluded: tuple[Term, ...] = ()  # -term: none may match
    dropped_stop_words: tuple[str, ...] = field(default=(), compare=False)
    # The plain words as typed: `optional` less the joined pairs added beside them.
    words: tuple[Term, ...] = field(default=(), compare=False)

    @property
    def terms(self) -> tuple[Term, ...]:
        return self.required + self.optional + self.excluded


def _clean(text: str) -> str:
    # Control characters (NUL included: FTS5 stops reading a string at NUL) become spaces,
    # as do unpaired surrogates, which cannot be encoded for SQLite at all.
    text = "".join(" " if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in text)
    return text.replace("\u2019", "'")  # a curly apostrophe is an apostrophe


def _has_word_chars(text: str) -> bool:
    # The same notion of "token character" as the unicode61 tokenizer: letters and digits.
    return any(ch.isalnum() for ch in text)


def _balance_quotes(text: str) -> str:
    """An odd `"` is text, not syntax: the last one is dropped so the rest pairs up."""
    if text.count('"') % 2:
        head, _, tail = text.rpartition('"')
        text = head + " " + tail
    return text


def parse_query(q: str) -> ParsedQuery:
    """Parse what a person or agent typed; raise `SearchQueryError` if nothing is searchable."""
    if q is None or not q.strip():
        raise SearchQueryError("Give some words to search for.")
    if len(q) > MAX_QUERY_CHARS:
        raise SearchQueryError(
            f"Too long: at most {MAX_QUERY_CHARS} characters, got {len(q)}. "
            "Search for the few words that matter."
        )
    text = _balance_quotes(_clean(q))

    required: list[Term] = []
    words: list[Term] = []
    excluded: list[Term] = []
    positions: dict[Term, int] = {}  # where each plain word stood, to find adjacent pairs
    for position, match in enumerate(_TOKEN_RE.finditer(text)):
        negated = match.group("neg") is not None
        if match.group("phrase") is not None:
            phrase = " ".join(match.group("phrase").split())
            if _has_word_chars(phrase):
                (excluded if negated else required).append(Term(phrase.lower()))
            continue
        term = _word_term(match.group("word"))
        if term is not None:
            (excluded if negated else words).append(term)
            if not negated:
                positions.setdefault(term, position)

    meaningful = [t for t in words if t.prefix or t.text not in STOP_WORDS]
    # A query of nothing but stop words ("who am I") still searches for them.
    optional = meaningful if (meaningful or required) else words
    dropped = tuple(t.text for t in words if t not in optional)
    typed = optional
    optional = optional + _joined_pairs(meaningful, positions)

    required, optional, excluded = _dedupe(required), _dedupe(optional), _dedupe(excluded)
    # Cap the work one query can ask for: phrases and exclusions first, they change the
    # result set; extra plain words only nudge the ranking.
    required = required[:MAX_TERMS]
    excluded = excluded[: MAX_TERMS - len(required)]
    optional = optional[: MAX_TERMS - len(required) - len(excluded)]

    if not required and not optional:
        if excluded:
            raise SearchQueryError(
                "Say what to look for, not only what to leave out (-word excludes a word)."
            )
        raise SearchQueryError("No words to search for: use letters or digits.")
    as_typed = tuple(term for term in _dedupe(typed) if term in optional)
    return ParsedQuery(tuple(required), tuple(optional), tuple(excluded), dropped, as_typed)


def _word_term(raw: str) -> Term | None:
    """One unquoted word: edge punctuation trimmed, a trailing `*` kept as a prefix mark."""
    word = _EDGE_PUNCT_RE.sub("", raw).lower()
    prefix = word.endswith("*")
    word = word.rstrip("*")
    if word in STOP_WORDS:
        return Term(word)
    word = _POSSESSIVE_RE.sub("", word)
    word = _EDGE_PUNCT_RE.sub("", word).rstrip("*")
    if not _has_word_chars(word):
        return None
    if prefix and sum(ch.isalnum() for ch in word) < MIN_PREFIX_CHARS:
        prefix = False  # "a*" would expand to half the vocabulary; search the word itself
    return Term(word, prefix=prefix)


def _joined_pairs(words: list[Term], positions: dict[Term, int]) -> list[Term]:
    """Two adjacent plain words also as one: "time zone" finds "timezone", "vs code" "VSCode".

    People and agents split or join compounds either way; the joined form is one more
    optional term (lowest priority under the term cap) and matches nothing when unused.
    """
    pairs = []
    for first, second in itertools.pairwise(words):
        if (
            positions.get(second, -2) == positions.get(first, -9) + 1
            and not (first.prefix or second.prefix)
            and first.text.isalnum()
            and second.text.isalnum()
        ):
            pairs.append(Term(first.text + second.text))
    return pairs


def _dedupe(terms: list[Term]) -> list[Term]:
    seen: dict[Term, None] = {}
    for term in terms:
        seen.setdefault(term, None)
    return list(seen)


def to_fts5(parsed: ParsedQuery) -> str:
    """The FTS5 MATCH expression for a parsed query, restricted to the searchable columns.

    Phrases are ANDed; plain words are ORed so any of them can match. With both, the phrases
    also appear in the OR group, which is then always satisfied: it only lets the plain words
    lift the ranking. FTS5 has no unary NOT, so exclusions become `(...) NOT (...)`.
    """

    def any_of(terms: Iterable[Term]) -> str:
        return " OR ".join(t.fts5() for t in terms)

    parts = [t.fts5() for t in parsed.required]
    if parsed.optional:
        parts.append(f"({any_of(parsed.required + parsed.optional)})")
    positive = " AND ".join(parts)
    expression = f"{FTS_USER_COLUMNS} : ({positive})"
    if parsed.excluded:
        expression = f"({expression}) NOT ({FTS_USER_COLUMNS} : ({any_of(parsed.excluded)}))"
    return expression


def fts5_expression(q: str) -> str:
    """User text → a safe FTS5 expression (raises `SearchQueryError` for unsearchable text)."""
    return to_fts5(parse_query(q))


def meaning_text(q: str) -> str:
    """What a search by meaning compares with the memories: the question as typed, without
    its exclusions (embedding "-docker" would pull towards docker) or quote marks."""
    text = _balance_quotes(_clean(q))
    kept = [
        match.group("phrase") if match.group("phrase") is not None else match.group("word")
        for match in _TOKEN_RE.finditer(text)
        if match.group("neg") is None
    ]
    return " ".join(" ".join(kept).split())
