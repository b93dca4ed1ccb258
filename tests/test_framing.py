"""meworkd.rpc.framing.LineSplitter: any chunking of any lines gives the lines back; a line over
the limit becomes one Oversized marker (its size) and the splitter goes on with the next line."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.daemon_fixture import DEFAULT_MAX_LINE, LineSplitter, Oversized

# Lines are bytes without the separator; the empty line is a legal line too.
lines_strategy = st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=30)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (sorted, deduplicated, clipped)."""
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, start = [], 0
    for point in [*points, len(data)]:
        chunks.append(data[start:point])
        start = point
    return chunks


def feed_all(splitter: LineSplitter, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out += splitter.feed(chunk)
    return out


@settings(max_examples=300, deadline=None)
@given(lines=lines_strategy, cuts=st.lists(st.integers(min_value=0, max_value=2000)))
def test_any_chunking_gives_back_the_lines(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    splitter = LineSplitter(max_line=1024)
    assert feed_all(splitter, chunked(data, cuts)) == lines
    assert splitter.pending == 0


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=25),
    cuts=st.lists(st.integers(min_value=0, max_value=1200)),
    limit=st.integers(min_value=1, max_value=24),
)
def test_oversized_lines_become_markers_and_the_splitter_recovers(
    lines: list[bytes], cuts: list[int], limit: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    splitter = LineSplitter(max_line=limit)
    expected = [line if len(line) <= limit else Oversized(len(line)) for line in lines]
    assert feed_all(splitter, chunked(data, cuts)) == expected
    assert splitter.pending == 0


@settings(max_examples=200, deadline=None)
@given(
    lines=lines_strategy,
    tail=st.binary(min_size=1, max_size=50).map(lambda b: b.replace(b"\n", b"")),
    cuts=st.lists(st.integers(min_value=0, max_value=2000)),
)
def test_an_unfinished_line_is_pending_not_emitted(
    lines: list[bytes], tail: bytes, cuts: list[int]
) -> None:
    data = b"".join(line + b"\n" for line in lines) + tail
    splitter = LineSplitter(max_line=1024)
    assert feed_all(splitter, chunked(data, cuts)) == lines
    assert splitter.pending == len(tail)
    # The rest of it arrives later: the line is complete and whole.
    assert splitter.feed(b"\n") == [tail]


def test_the_limit_is_inclusive() -> None:
    splitter = LineSplitter(max_line=8)
    assert splitter.feed(b"12345678\n123456789\nok\n") == [b"12345678", Oversized(9), b"ok"]


def test_an_oversized_line_is_dropped_while_it_arrives() -> None:
    splitter = LineSplitter(max_line=4)
    assert splitter.feed(b"abcdef") == []
    assert splitter.pending == 6
    assert splitter.feed(b"g" * 1000) == []
    assert splitter.pending == 1006  # counted, not buffered
    assert splitter.feed(b"h\nnext\n") == [Oversized(1007), b"next"]


def test_the_default_limit_is_8_mib() -> None:
    assert DEFAULT_MAX_LINE == 8 * 1024 * 1024
    splitter = LineSplitter()
    big = b"x" * DEFAULT_MAX_LINE
    assert splitter.feed(big + b"\n" + big + b"y\n{}\n") == [
        big,
        Oversized(DEFAULT_MAX_LINE + 1),
        b"{}",
    ]


def test_an_oversized_line_keeps_its_ends() -> None:
    """Where a JSON-RPC message names its id (first or last) survives the line being dropped."""
    splitter = LineSplitter(max_line=16)
    line = b'{"id": 7, ' + b"x" * 1000 + b', "end": 1}'
    out = splitter.feed(line[:300]) + splitter.feed(line[300:] + b"\nok\n")
    assert out == [Oversized(len(line)), b"ok"]
    marker = out[0]
    assert isinstance(marker, Oversized)
    assert line.startswith(marker.head)
    assert marker.head.startswith(b'{"id": 7, ')
    assert line.endswith(marker.tail)
    assert marker.tail.endswith(b', "end": 1}')
