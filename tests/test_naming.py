"""The model-facing tool name contract (DESIGN.md, "Turns" step 3)."""

import hashlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from meworkd.core.catalog import (
    NAME_PATTERN,
    Collision,
    bind_names,
    digest,
    slug,
    tool_name,
    was_shortened,
    was_truncated,
)

# Any code point but surrogates (not encodable as UTF-8; covered separately below), so control
# characters, combining marks, RTL text, emoji and private-use characters all appear.
ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)
NASTY = [
    "",
    " ",
    "\t\n\r",
    "\x00\x01\x1f\x7f",
    "🙂🚀",
    "👩‍👩‍👧",
    "עברית ملف",
    "\u202eevil\u202c",
    "日本語",
    "-" * 80,
    "_" * 80,
    "a" * 1000,
    "Ǆ ﬁ ½ ①",
]


# Golden values: the digests are the first 6 hex digits of `printf '%s' NAME | sha256sum`.
@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("filesystem", "read_file", "mcp__filesystem_cbf618__read-file__c9f812"),
        ("Mon Serveur Été", "Read File (v2)", "mcp__mon-serveur-ete_7e3d3a__read-file-v2__4717eb"),
        ("", "日本語", "mcp__x_e3b0c4__x__77710a"),
    ],
)
def test_golden_names(server: str, tool: str, expected: str) -> None:
    assert tool_name(server, tool) == expected


@pytest.mark.parametrize(
    ("s", "n", "expected"),
    [
        ("filesystem", 16, "filesystem"),
        ("read_file", 24, "read-file"),
        ("  --Hello,   World!--  ", 24, "hello-world"),
        ("Été", 16, "ete"),
        ("ﬁle", 16, "file"),  # NFKD splits the ligature
        ("①②", 16, "12"),  # NFKD turns circled digits into digits
        ("🙂", 16, "x"),
        ("", 16, "x"),
        ("---", 16, "x"),
        ("abcdefghijklmnop-qrstuvwxyz", 16, "abcdefghijklmnop"),
        # The cut lands right after a separator: strip again.
        ("abcdefghijklmno-pqrstuvwxyz", 16, "abcdefghijklmno"),
        ("ABC_def.GHI", 24, "abc-def-ghi"),
        ("a\x00b\nc", 24, "a-b-c"),
    ],
)
def test_slug_examples(s: str, n: int, expected: str) -> None:
    assert slug(s, n) == expected


def test_digest_is_sha256_prefix_of_utf8() -> None:
    for name in ["filesystem", "Été", "🙂", ""]:
        assert digest(name) == hashlib.sha256(name.encode("utf-8")).hexdigest()[:6]


def test_digest_tolerates_lone_surrogates() -> None:
    name = tool_name("srv\ud800", "tool\udfff")
    assert NAME_PATTERN.fullmatch(name)
    assert name != tool_name("srv", "tool")


def test_longest_name_is_62_characters() -> None:
    name = tool_name("s" * 100, "t" * 100)
    assert len("mcp__") + 16 + 1 + 6 + 2 + 24 + 2 + 6 == 62
    assert len(name) == 62
    assert name == f"mcp__{'s' * 16}_{digest('s' * 100)}__{'t' * 24}__{digest('t' * 100)}"


@given(server=ANY_TEXT, tool=ANY_TEXT)
@example(server="", tool="")
@example(server="a" * 10_000, tool="ü" * 10_000)
def test_every_name_is_valid(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert NAME_PATTERN.fullmatch(name)
    assert len(name) <= 62
    assert name.startswith("mcp__")


# Ids by position: the texts' own ids collide ("" with "-" * 80 gives 81 dashes both ways), and
# pytest-xdist keeps one test per id, so a pair would silently not run.
NASTY_IDS = [f"nasty{i}" for i in range(len(NASTY))]


@pytest.mark.parametrize("server", NASTY, ids=NASTY_IDS)
@pytest.mark.parametrize("tool", NASTY, ids=NASTY_IDS)
def test_nasty_names_are_valid(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert NAME_PATTERN.fullmatch(name)
    assert len(name) <= 62


@given(s=ANY_TEXT, n=st.integers(min_value=1, max_value=40))
def test_slug_shape(s: str, n: int) -> None:
    out = slug(s, n)
    assert 1 <= len(out) <= n
    assert all(c in "abcdefghijklmnopqrstuvwxyz0123456789-" for c in out)
    assert not out.startswith("-")
    assert not out.endswith("-")
    assert "--" not in out


@given(s=ANY_TEXT, n=st.integers(min_value=1, max_value=40))
def test_slug_is_idempotent(s: str, n: int) -> None:
    assert slug(slug(s, n), n) == slug(s, n)


@given(server=ANY_TEXT, tool=ANY_TEXT)
def test_names_are_stable(server: str, tool: str) -> None:
    # Pure function of the originals: the same inputs (even as fresh objects) give the same name.
    assert tool_name(server, tool) == tool_name(str(server), "".join(list(tool)))


@given(a=st.tuples(ANY_TEXT, ANY_TEXT), b=st.tuples(ANY_TEXT, ANY_TEXT))
def test_distinct_originals_give_distinct_names_unless_digests_collide(
    a: tuple[str, str], b: tuple[str, str]
) -> None:
    if a != b and tool_name(*a) == tool_name(*b):
        assert digest(a[0]) == digest(b[0])
        assert digest(a[1]) == digest(b[1])


def test_same_slug_different_names_differ_by_digest() -> None:
    # All of these fold to the slug "read-file"; only the digest tells them apart.
    variants = ["read_file", "read-file", "Read File", "READ.FILE", "read__file", "réad_file"]
    names = {tool_name("fs", v) for v in variants}
    assert len(names) == len(variants)
    assert {n.split("__")[2] for n in names} == {"read-file"}


# Found by brute force: two tool names with the same slug and the same 6-hex-digit digest.
FORCED_A = "read:-...file"
FORCED_B = "read:.-//file"


def test_forced_collision_really_collides() -> None:
    assert FORCED_A != FORCED_B
    assert tool_name("fs", FORCED_A) == tool_name("fs", FORCED_B)


def test_bind_names_reports_a_collision_instead_of_shadowing() -> None:
    bound, collisions = bind_names([("fs", FORCED_A), ("fs", "write_file"), ("fs", FORCED_B)])
    name = tool_name("fs", FORCED_A)
    assert bound == {
        name: ("fs", FORCED_A),
        tool_name("fs", "write_file"): ("fs", "write_file"),
    }
    assert collisions == [
        Collision(server="fs", tool=FORCED_B, name=name, clashes_with=("fs", FORCED_A))
    ]


def test_bind_names_keeps_the_first_in_the_given_order() -> None:
    bound, collisions = bind_names([("fs", FORCED_B), ("fs", FORCED_A)])
    assert list(bound.values()) == [("fs", FORCED_B)]
    assert [(c.tool, c.clashes_with) for c in collisions] == [(FORCED_A, ("fs", FORCED_B))]


def test_bind_names_reports_a_repeated_pair() -> None:
    bound, collisions = bind_names([("fs", "read_file"), ("fs", "read_file")])
    assert len(bound) == 1
    assert collisions == [
        Collision("fs", "read_file", tool_name("fs", "read_file"), ("fs", "read_file"))
    ]


def test_bind_names_same_tool_on_two_servers() -> None:
    bound, collisions = bind_names([("a", "search"), ("b", "search")])
    assert collisions == []
    assert sorted(bound.values()) == [("a", "search"), ("b", "search")]


def test_bind_names_accepts_any_iterable_and_empty() -> None:
    assert bind_names(iter([])) == ({}, [])
    bound, _ = bind_names(p for p in [("s", "t")])
    assert bound == {tool_name("s", "t"): ("s", "t")}


@given(pairs=st.lists(st.tuples(ANY_TEXT, ANY_TEXT), max_size=20))
def test_bind_names_accounts_for_every_pair(pairs: list[tuple[str, str]]) -> None:
    bound, collisions = bind_names(pairs)
    assert len(bound) + len(collisions) == len(pairs)
    for name, pair in bound.items():
        assert tool_name(*pair) == name
    for c in collisions:
        assert bound[c.name] == c.clashes_with
        assert tool_name(c.server, c.tool) == c.name


@pytest.mark.parametrize(
    ("server", "tool", "shortened", "truncated"),
    [
        ("filesystem", "search", False, False),
        ("docs", "read-file", False, False),
        ("filesystem", "read_file", True, False),  # "_" became "-"
        ("Docs", "search", True, False),  # case folded
        ("files", "ünïcode", True, False),
        ("a" * 16, "b" * 24, False, False),  # exactly at the widths
        ("a" * 17, "search", True, True),
        ("docs", "b" * 25, True, True),
        ("", "search", True, False),  # became "x"
        ("x", "x", False, False),
    ],
)
def test_was_shortened(server: str, tool: str, shortened: bool, truncated: bool) -> None:
    assert was_shortened(server, tool) is shortened
    assert was_truncated(server, tool) is truncated


@given(server=ANY_TEXT, tool=ANY_TEXT)
def test_not_shortened_means_originals_appear_verbatim(server: str, tool: str) -> None:
    if not was_shortened(server, tool):
        assert tool_name(server, tool) == (
            f"mcp__{server}_{digest(server)}__{tool}__{digest(tool)}"
        )
    if was_truncated(server, tool):
        assert was_shortened(server, tool)
