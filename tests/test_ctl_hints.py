"""Every ``meworkctl …`` command line a person is told to type parses with meworkctl's own parser.

The lines are taken from where people read them: the string literals of the daemon and the
clients (messages, hints, help texts, docstrings) and the code spans and code blocks of the
README and docs/. A hint that names a command that does not exist (``meworkctl daemon
shutdown``, ``servers get``) fails here, not in front of a newcomer.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mework_client.ctl.parser import parse_args

ROOT = Path(__file__).resolve().parent.parent

# Shell code, not messages: its command lines are built from shell variables.
NOT_MESSAGES = {"clients/mework_client/ctl/completion_shells.py"}
PYTHON = sorted(
    p
    for p in [*(ROOT / "meworkd").rglob("*.py"), *(ROOT / "clients").rglob("*.py")]
    if str(p.relative_to(ROOT)) not in NOT_MESSAGES
)
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Words that follow "meworkctl" in a sentence about it ("meworkctl runs no model"). A word that
# is neither a command nor listed here fails the test: add it here only if it is prose.
PROSE = frozenset(
    [
        "command",
        "does",
        "in",
        "is",
        "prints",
        "runs",
        "says",
        "speaks",
        "starts",
        "takes",
        "treats",
        "waits",
    ]
)

# A value filled in at run time (an f-string's field, a placeholder such as NAME or COMMAND):
# the line is fine if NAME, or one of the choices the parser offers there, makes it parse.
HOLE = "\x00"
OPENERS = {"'": "'", '"': '"', "`": "`", "(": ")"}


@dataclass(frozen=True)
class Quoted:
    """A command line as written (after ``meworkctl``) and where it was found."""

    where: str
    text: str


def _literal_texts(tree: ast.AST) -> Iterator[str]:
    """Each string literal's text; an f-string's fields become HOLE."""
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inside_fstrings.add(id(value))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    parts.append(HOLE)
            yield "".join(parts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
        ):
            yield node.value


def _markdown_texts(text: str) -> Iterator[str]:
    """The code of a Markdown page: each line of its code blocks, each inline code span."""
    fenced = False
    paragraph: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            yield line
        elif line.strip():
            paragraph.append(line.strip())
        else:  # a code span may go on over a line break, not past its paragraph
            joined = " ".join(paragraph)
            yield from (a or b for a, b in re.findall(r"``(.+?)``|`([^`]+)`", joined))
            paragraph = []


def _in_text(text: str) -> Iterator[str]:
    """What follows each ``meworkctl`` in a text, up to the end of its quote or line."""
    for match in re.finditer(r"(?<![\w./-])meworkctl(?= )", text):
        start = match.start()
        if text[max(0, start - 7) : start] == "usage: ":
            continue
        rest = text[match.end() :].split("\n", 1)[0]
        closer = OPENERS.get(text[start - 1]) if start else None
        if closer is not None:
            rest = rest.split(closer, 1)[0]
        yield rest.strip()


def quoted_lines() -> list[Quoted]:
    found: list[Quoted] = []
    for path in PYTHON:
        where = str(path.relative_to(ROOT))
        for literal in _literal_texts(ast.parse(path.read_text())):
            found += [Quoted(where, t) for t in _in_text(literal)]
    for path in MARKDOWN:
        where = str(path.relative_to(ROOT))
        for code in _markdown_texts(path.read_text()):
            found += [Quoted(where, t) for t in _in_text(code)]
    return found


def _words(text: str) -> list[str] | None:
    """The argv of a quoted line, cut at the first shell operator or sentence end.

    None when the line is not a command: a sentence about meworkctl, or its bare name.
    """
    text = re.sub(r"<([a-z-]+)>", lambda m: m[1].upper(), text)  # <turn-id> → TURN-ID
    text = re.sub(r"\[[A-Za-z_ -]+\]|…|\.\.\.", " ", text)  # [options], elisions
    if not text.split() or text.split()[0].rstrip(":,.") in PROSE:
        return None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    argv: list[str] = []
    for token in lexer:
        if set(token) <= set(";&|()<>"):
            break
        if token[-1] in ",.:" and not token.startswith("-"):
            argv.append(token[:-1])
            break
        argv.append(token)
    # A placeholder (NAME, SHELL, COMMAND) is a hole a value of its own kind fills.
    return [HOLE if re.fullmatch(r"[A-Z][A-Z0-9_-]+", w) else w for w in argv] or None


def _alternatives(text: str) -> list[str]:
    """``servers list|get`` is two lines to check (``a | b``, with spaces, is a pipe)."""
    parts = re.split(r"(\S+\|\S+)", text)
    choices = [part.split("|") if i % 2 else [part] for i, part in enumerate(parts)]
    return ["".join(chosen) for chosen in itertools.product(*choices)]


def _parse_error(argv: list[str]) -> str | None:
    """argparse's complaint about this line, or None if meworkctl accepts it."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            parse_args(argv)
        except SystemExit as exc:
            return None if exc.code == 0 else err.getvalue()  # 0: --help
    return None


def _problem(argv: list[str], depth: int = 0) -> str | None:
    """Why this line does not parse, trying every choice the parser offers for each hole.

    A line that only names a command (``meworkctl servers edit``) is fine without its arguments.
    """
    line = [word.replace(HOLE, "NAME") for word in argv]
    error = _parse_error(line)
    if error is None or "the following arguments are required" in error:
        return None
    offered = re.search(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)", error)
    holes = [i for i, w in enumerate(argv) if HOLE in w and offered and line[i] == offered[1]]
    if offered and holes and depth < 4:
        i = holes[0]
        pattern = ".*".join(re.escape(piece) for piece in argv[i].split(HOLE))
        for choice in (c.strip("'\" ") for c in offered[2].split(",")):
            fits = re.fullmatch(pattern, choice)
            if fits and _problem([*argv[:i], choice, *argv[i + 1 :]], depth + 1) is None:
                return None
    return error.strip().splitlines()[-1]


QUOTED = quoted_lines()


def test_the_hints_are_found() -> None:
    where = {q.where for q in QUOTED}
    assert "README.md" in where
    assert "meworkd/app/instance.py" in where
    assert "clients/mework_client/ctl/servers.py" in where
    assert len(QUOTED) > 80


@pytest.mark.parametrize("quoted", sorted(set(QUOTED), key=repr), ids=lambda q: q.where)
def test_a_quoted_command_line_parses(quoted: Quoted) -> None:
    for text in _alternatives(quoted.text):
        argv = _words(text)
        if argv is None:
            continue
        problem = _problem(argv)
        assert problem is None, f"{quoted.where}: 'meworkctl {text}': {problem}"


@pytest.mark.parametrize(
    "text",
    ["daemon shutdown", "servers get NAME --json", "servers list|get", "conv create --nope"],
)
def test_a_wrong_line_is_caught(text: str) -> None:
    assert any(
        (argv := _words(t)) is not None and _problem(argv) is not None for t in _alternatives(text)
    )


@pytest.mark.parametrize("text", ["runs no model. Refuse it?", "is still waiting):"])
def test_prose_about_meworkctl_is_not_a_command(text: str) -> None:
    assert _words(text) is None


def test_the_readmes_approval_prompt_is_meworkctls() -> None:
    """The walkthrough shows the prompt a person meets; it changes when the prompt does."""
    from mework_client.ctl.answers import ALLOW_PROMPT

    shown = [line for line in (ROOT / "README.md").read_text().splitlines() if "Allow?" in line]
    assert shown
    assert all(line.startswith(ALLOW_PROMPT) for line in shown), shown
