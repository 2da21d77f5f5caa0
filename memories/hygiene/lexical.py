"""Words of a memory as the hygiene checks compare them: folded, stemmed, without function
words, and character shingles; one similarity in [0, 1] from both."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache

from memories.search.query import STOP_WORDS

# Kept as words: a sentence that says "not" says something else.
NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "nothing", "without", "cannot"})
_STOP = STOP_WORDS - NEGATIONS
_WORD = re.compile(r"\w+")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
SHINGLE = 3
# How much the shingles count beside the words: they catch a word split, joined or inflected.
SHINGLE_WEIGHT = 0.5


def fold(text: str) -> str:
    """Case-folded, diacritics off, "n't" spelled "not"."""
    text = text.casefold().replace("\u2019", "'")
    if not text.isascii():  # only such text has diacritics to take off (most has none)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return text.replace("n't", " not")


@lru_cache(maxsize=1 << 16)  # a mind's texts repeat the same few thousand words
def stem(word: str) -> str:
    """A crude English stem: enough to meet "prefers" with "preferred"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    """The folded words of `text`, function words left out."""
    return [w for w in _WORD.findall(fold(text)) if w not in _STOP]


@dataclass(frozen=True)
class Text:
    """One memory's text, measured once for every comparison it takes part in."""

    text: str

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def tokens(self) -> frozenset[str]:
        return frozenset(stem(w) for w in self.words)

    @cached_property
    def shingles(self) -> frozenset[str]:
        joined = " ".join(self.words)
        return frozenset(joined[i : i + SHINGLE] for i in range(len(joined) - SHINGLE + 1))


def dice(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def similarity(a: Text, b: Text) -> float:
    """How nearly the two texts repeat each other's words, 0 to 1."""
    by_words = dice(a.tokens, b.tokens)
    by_shingles = dice(a.shingles, b.shingles)
    return (by_words + SHINGLE_WEIGHT * by_shingles) / (1 + SHINGLE_WEIGHT)
