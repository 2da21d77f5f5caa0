"""User text → FTS5 expression: natural words, phrases, prefixes, exclusions, hostile input."""

from __future__ import annotations

import sqlite3

import pytest

from memories.search.query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    SearchQueryError,
    Term,
    fts5_expression,
    parse_query,
    to_fts5,
)


def texts(terms) -> list[str]:
    return [t.text for t in terms]


@pytest.fixture(scope="module")
def fts():
    """A throwaway FTS5 table with our tokenizer: every expression must parse in FTS5 itself."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(key, tags, content, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany(
        "INSERT INTO f VALUES (?, ?, ?)",
        [
            ("pref_editor", "tools", "Uses Neovim with LazyVim"),
            ("identity_name", "person", "Michael Schäfer"),
            ("project_deploy", "docker ci", "Deployed with docker compose on Fridays"),
            ("note_and", "misc", 'He said "AND(" NEAR the end; content:x'),
        ],
    )
    yield db
    db.close()


def matches(fts, q: str) -> list[str]:
    rows = fts.execute("SELECT key FROM f WHERE f MATCH ? ORDER BY rank", (fts5_expression(q),))
    return [r[0] for r in rows]


def test_natural_question_keeps_meaningful_words_as_any_of():
    parsed = parse_query("Which editor does the user's team use?")
    assert texts(parsed.optional) == ["editor", "user", "team", "use", "userteam", "teamuse"]
    assert parsed.dropped_stop_words == ("which", "does", "the")
    assert parsed.required == () and parsed.excluded == ()
    assert to_fts5(parsed) == (
        '{key tags content} : (("editor" OR "user" OR "team" OR "use" OR "userteam" OR "teamuse"))'
    )


def test_adjacent_words_are_also_tried_joined():
    # "time zone" finds "timezone"; words that were not adjacent are not joined.
    assert texts(parse_query("time zone").optional) == ["time", "zone", "timezone"]
    assert texts(parse_query("vs code editor").optional) == [
        "vs",
        "code",
        "editor",
        "vscode",
        "codeeditor",
    ]
    assert texts(parse_query("time of day").optional) == ["time", "day"]
    assert texts(parse_query("node.js docker*").optional) == ["node.js", "docker"]


def test_only_stop_words_are_still_searched():
    assert texts(parse_query("who am I").optional) == ["who", "am", "i"]


def test_quoted_phrase_is_required_and_words_only_rank():
    parsed = parse_query('"docker compose" deploy')
    assert texts(parsed.required) == ["docker compose"]
    assert texts(parsed.optional) == ["deploy"]
    assert to_fts5(parsed) == (
        '{key tags content} : ("docker compose" AND ("docker compose" OR "deploy"))'
    )


def test_prefix_and_exclusion():
    parsed = parse_query("neov* -docker")
    assert parsed.optional == (Term("neov", prefix=True),)
    assert parsed.excluded == (Term("docker"),)
    assert to_fts5(parsed) == (
        '({key tags content} : (("neov"*))) NOT ({key tags content} : ("docker"))'
    )


def test_prefix_ending_in_y_also_tries_it_without_the_y():
    # Porter stems the prefix too: "lazy*" alone would look for "lazi…".
    assert Term("lazy", prefix=True).fts5() == '("lazy"* OR "laz"*)'


def test_excluded_phrase():
    assert parse_query('editor -"lazy vim"').excluded == (Term("lazy vim"),)


def test_hyphen_inside_a_word_is_not_exclusion():
    parsed = parse_query("e-mail x86-64")
    assert texts(parsed.optional) == ["e-mail", "x86-64"] and parsed.excluded == ()


def test_inner_quote_is_doubled():
    assert Term('say "hi"').fts5() == '"say ""hi"""'


def test_too_short_prefix_is_a_plain_word():
    assert parse_query("x* editor").optional[0] == Term("x")


def test_terms_are_capped():
    parsed = parse_query(" ".join(f"word{i}" for i in range(100)))
    assert len(parsed.terms) == MAX_TERMS


def test_duplicates_collapse():
    assert texts(parse_query("Docker docker DOCKER").optional) == ["docker"]


@pytest.mark.parametrize("q", ["", "   ", "\t\n", "*", "+++", '""', "- -", "?", "\x00"])
def test_nothing_searchable_is_an_error(q):
    with pytest.raises(SearchQueryError):
        parse_query(q)


def test_only_exclusions_is_an_error():
    with pytest.raises(SearchQueryError, match="not only what to leave out"):
        parse_query("-docker")


def test_too_long_is_an_error():
    with pytest.raises(SearchQueryError, match="at most"):
        parse_query("x" * (MAX_QUERY_CHARS + 1))


HOSTILE = [
    '"unbalanced',
    'a "b c',
    'a"b"c"',
    "AND(",
    "AND",
    "OR OR",
    "NOT docker",
    "docker NOT",
    "NEAR(a b, 2)",
    "NEAR",
    "content:x",
    "key:pref",
    "{key content}: editor",
    "^editor",
    "+editor",
    "editor*",
    "**",
    "* *",
    "ed*itor",
    "(editor",
    "editor)",
    "'; DROP TABLE memories_memory; --",
    "1 OR 1=1",
    "x\x00y",
    "\x00",
    "a\x1fb\x7f",
    "\ud800 lone surrogate",
    "💥 emoji 🙂",
    "日本語のテキスト",
    "Schäfer",
    "x" * MAX_QUERY_CHARS,
    " ".join(["editor"] * 400),
    '"""',
    '-"',
    "-",
    "--docker",
    "editor -",
    '\\"escaped\\"',
    "mind_id : m_x",
]


@pytest.mark.parametrize("q", HOSTILE)
def test_hostile_input_is_valid_fts5_or_a_clear_error(fts, q):
    try:
        expression = fts5_expression(q)
    except SearchQueryError as exc:
        assert str(exc)
        return
    matches(fts, q)  # FTS5 accepts it: no syntax error can reach the database
    assert expression.startswith(("{key tags content}", "({key tags content}"))


def test_operator_words_are_plain_words(fts):
    assert matches(fts, "NEAR the end") == ["note_and"]
    assert matches(fts, "content:x") == ["note_and"]


def test_accents_stemming_and_key_parts_match(fts):
    assert matches(fts, "schafer") == ["identity_name"]
    assert matches(fts, "deploying") == ["project_deploy"]
    assert matches(fts, "editor") == ["pref_editor"]
    assert matches(fts, "lazy*") == ["pref_editor"]
    assert matches(fts, "docker -fridays") == []
    assert matches(fts, '"docker compose"') == ["project_deploy"]
    assert matches(fts, '"compose docker"') == []
