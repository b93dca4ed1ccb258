"""JSON with comments: the settings file and ``servers.import`` read JSONC, hostile JSONC fails
with a line and column, and meworkd's writes keep the user's comments and layout byte for byte
outside the values they change (through the real daemon and its RPC, and the editor alone)."""

import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mework_client.sync import RpcError

from meworkd.base.errors import InvalidSettings
from meworkd.settings.jsonc_edit import rewrite
from meworkd.settings.parse import decode_document, duplicate_keys, loads_keyed
from tests.daemon_fixture import daemon_and_client, make_env

# --- reading ---------------------------------------------------------------------------------


def test_comments_and_trailing_commas_are_read() -> None:
    text = b"""// settings
    {
      /* block
         comment */ "a": [1, 2,], // after
      "b": {"c": "d",},
    }"""
    assert decode_document(text) == {"a": [1, 2], "b": {"c": "d"}}
    assert loads_keyed(text) == {"a": [1, 2], "b": {"c": "d"}}


def test_comment_marks_inside_strings_are_text() -> None:
    text = b'{"url": "http://h//x", "s": "/* not a comment */", "q": "a\\"//b", "e": ","}'
    expected = {"url": "http://h//x", "s": "/* not a comment */", "q": 'a"//b', "e": ","}
    assert decode_document(text) == expected
    assert loads_keyed(text.decode()) == expected


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        # an unterminated block comment, and one that only looks closed
        ('{\n  "a": 1 /* never closed\n}', "Unterminated /* comment", 2, 10),
        ('{"a": 1 /*/}', "Unterminated /* comment", 1, 9),
        # block comments do not nest: the first */ ends it and "still" is where JSON breaks
        ('{"a": 1 /* outer /* inner */ still */}', "Expecting ',' delimiter", 1, 30),
        # a lone slash is not a comment
        ('{"a": 1 / 2}', "Expecting ',' delimiter", 1, 9),
        # positions count CRLF line ends as one line end
        ('{\r\n  "a": 1, // fine\r\n  "b": 2 "c"\r\n}', "Expecting ',' delimiter", 3, 10),
        # comments do not stand for values, and a comma alone is not a trailing comma
        ('{"a": /* nothing */}', "Expecting value", 1, 20),
        ('{"a": 1,,}', "Expecting property name", 1, 10),  # the second comma is the trailing one
    ],
)
def test_broken_jsonc_says_where(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        loads_keyed(text)
    assert caught.value.msg.startswith(message)
    assert (caught.value.lineno, caught.value.colno) == (line, column)
    with pytest.raises(InvalidSettings) as invalid:
        decode_document(text.encode())
    assert f"{message}" in invalid.value.message
    assert f"at line {line}, column {column}" in invalid.value.message


def test_a_byte_order_mark_and_crlf_are_accepted() -> None:
    text = '\ufeff{\r\n  // c\r\n  "a": 1,\r\n}\r\n'
    assert decode_document(text.encode()) == {"a": 1}
    assert loads_keyed(text) == {"a": 1}
    assert loads_keyed(text.encode()) == {"a": 1}


def test_duplicate_keys_are_reported_in_jsonc() -> None:
    text = b'{"s": {"a": 1, /* again: */ "a": 2,}, // more\n "s": {},}'
    found = duplicate_keys(text)
    assert len(found) == 1
    assert "the top level: 's' appears more than once" in found[0]
    assert (
        "s: 'a' appears more than once"
        in duplicate_keys(b'{"s": {"a": 1, /* again: */ "a": 2,},}')[0]
    )


# --- the editor alone ------------------------------------------------------------------------


def edited(text: str, change: Callable[[dict[str, Any]], object]) -> str:
    old = loads_keyed(text)
    new = copy.deepcopy(old)
    change(new)
    out = rewrite(text.encode(), old, new)
    assert out is not None
    assert loads_keyed(out) == new
    return out.decode()


def test_crlf_and_byte_order_mark_survive_an_added_member() -> None:
    text = '\ufeff{\r\n\t"a": 1 // one\r\n}\r\n'
    out = edited(text, lambda d: d.update(b={"c": True}))
    assert out == '\ufeff{\r\n\t"a": 1, // one\r\n\t"b": {\r\n\t\t"c": true\r\n\t}\r\n}\r\n'


def test_an_empty_object_opens_up_and_a_one_line_object_stays_on_its_line() -> None:
    text = '{\n  "s": {},\n  "env": {"A": "1"}\n}\n'
    out = edited(text, lambda d: (d["s"].update(x=1), d["env"].update(B="2")))
    assert out == '{\n  "s": {\n    "x": 1\n  },\n  "env": {"A": "1", "B": "2"}\n}\n'


def test_an_added_member_is_indented_like_its_siblings_not_like_comments() -> None:
    text = '/*\n * my file\n */\n{\n    /* first */ "a": {}\n}\n'
    out = edited(text, lambda d: d.update(b=[1]))
    assert (
        out == '/*\n * my file\n */\n{\n    /* first */ "a": {},\n    "b": [\n        1\n    ]\n}\n'
    )


def test_an_added_key_goes_where_the_new_document_puts_it() -> None:
    text = (
        '{\n  "s": {\n    "command": "x", // why\n    "args": []\n  },\n  "t": {"command": "y"}\n}'
    )
    new = '{\n  "s": {\n    "type": "stdio",\n    "command": "x", // why\n    "args": []\n  },\n'
    new += '  "t": {"type": "stdio", "command": "y"}\n}'
    out = edited(
        text, lambda d: [d.update(s={"type": "stdio", **d["s"]}, t={"type": "stdio", **d["t"]})]
    )
    assert out == new


def test_removing_the_last_member_takes_the_comma_before_it() -> None:
    text = '{\n  "a": 1, // keep\n  "b": 2 // gone with b\n}\n'
    assert edited(text, lambda d: d.pop("b")) == '{\n  "a": 1 // keep\n}\n'
    assert edited(text, lambda d: d.clear()) == "{\n}\n"


def test_a_repeated_key_is_edited_where_it_counts_and_removed_everywhere() -> None:
    text = '{\n  "a": 1,\n  "a": 2,\n  "b": 3\n}'
    assert edited(text, lambda d: d.update(a=5)) == '{\n  "a": 1,\n  "a": 5,\n  "b": 3\n}'
    assert edited(text, lambda d: d.pop("a")) == '{\n  "b": 3\n}'


def test_text_that_cannot_be_edited_is_left_to_a_fresh_write() -> None:
    assert rewrite(b'["not", "an object"]', {}, {"a": 1}) is None
    assert rewrite(b"\xff{}", {}, {"a": 1}) is None
    # The text does not hold the document it is said to hold: the edit would not read back.
    assert rewrite(b'{"a": 1}', {"a": 2}, {"a": 2, "b": 3}) is None


# --- through the daemon ----------------------------------------------------------------------

SETTINGS = """// meworkd settings, kept by hand
{
  "assets": {
    /* the servers I use */
    "mcpServers": {
      "time": {
        "type": "stdio",
        "command": "mcp-server-time", // from PyPI
        "enabled": true,
      },
      // files of my projects
      "fs": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["/tmp"]},
    },
  },
  "presets": {},  // none yet
}
"""

DOCS_ENTRY = """
      "docs": {
        "type": "streamable_http",
        "url": "http://127.0.0.1:9/mcp"
      },"""

IMPORT = """{
  // pasted from a README
  "mcpServers": {
    "t2": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC",],},
  },
}"""


class Expected:
    """The text the settings file must hold: the user's, with only the changed values changed."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def change(self, old: str, new: str) -> None:
        assert self.text.count(old) == 1
        self.text = self.text.replace(old, new)
        assert self.path.read_text() == self.text


@pytest.mark.anyio
async def test_rpc_writes_keep_comments_and_layout(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    env.settings.parent.mkdir(parents=True)
    env.settings.write_text(SETTINGS)
    env.settings.chmod(0o600)
    file = Expected(env.settings, SETTINGS)
    async with daemon_and_client(env) as (_, client):
        listed = await client.call("servers.list")
        assert [s["name"] for s in listed["servers"]] == ["time", "fs"]
        await client.call("servers.update", {"name": "time", "patch": {"enabled": False}})
        file.change('"enabled": true,', '"enabled": false,')
        await client.call(
            "servers.setToolEnabled", {"name": "fs", "tool": "write_file", "enabled": False}
        )
        file.change('["/tmp"]}', '["/tmp"], "disabledTools": ["write_file"]}')
        await client.call(
            "servers.add", {"name": "docs", "server": {"url": "http://127.0.0.1:9/mcp"}}
        )
        file.change('["write_file"]},\n', '["write_file"]},' + DOCS_ENTRY + "\n")
        await client.call("servers.rename", {"name": "time", "newName": "clock"})
        file.change('"time": {', '"clock": {')
        await client.call("servers.remove", {"name": "fs"})
        file.change(
            '      "fs": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["/tmp"], '
            '"disabledTools": ["write_file"]},\n',
            "",
        )
        reply = await client.call("servers.import", {"text": IMPORT})
        assert reply["added"] == ["t2"]
        file.change(
            '"url": "http://127.0.0.1:9/mcp"\n      },\n',
            '"url": "http://127.0.0.1:9/mcp"\n      },\n      "t2": {\n        "type": "stdio",\n'
            '        "command": "mcp-server-time",\n        "args": [\n          '
            '"--local-timezone",\n          "UTC"\n        ]\n      },\n',
        )
        with pytest.raises(RpcError) as caught:
            await client.call("servers.import", {"text": '{"mcpServers": {} /* open'})
        assert caught.value.data["line"] == 1
        assert caught.value.data["column"] == 19
        assert "Unterminated /* comment" in caught.value.message
        listed = await client.call("servers.list")
    assert [s["name"] for s in listed["servers"]] == ["clock", "docs", "t2"]


# --- many documents, many edits --------------------------------------------------------------


class Documents:
    """Seeded random JSONC documents (comments everywhere JSONC allows) and random edits."""

    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)

    def value(self, depth: int) -> Any:
        if depth < 3 and self.rnd.random() < 0.4:
            return {f"k{self.rnd.randrange(6)}": self.value(depth + 1) for _ in range(3)}
        if self.rnd.random() < 0.2:
            return [self.rnd.randrange(5) for _ in range(self.rnd.randrange(3))]
        return self.rnd.choice([1, "s//x", "/*", ",]", True, None, 2.5, "é"])

    def text(self, value: Any, indent: str, newline: str) -> str:
        if not isinstance(value, dict) or not value:
            return json.dumps(value, ensure_ascii=False)
        inner = indent + "  "
        lead = ["", "/* b */ ", "// line" + newline + inner]
        members = [
            f"{inner}{self.rnd.choice(lead)}{json.dumps(key)}{self.rnd.choice(['', ' /**/'])}: "
            + self.text(item, inner, newline)
            for key, item in value.items()
        ]
        trailing = self.rnd.choice(["", ",", ", // end"])
        between = "," + self.rnd.choice(["", " // c"]) + newline
        return "{" + newline + between.join(members) + trailing + newline + indent + "}"

    def edit(self, doc: dict[str, Any]) -> None:
        keys = list(doc)
        roll = self.rnd.random()
        if keys and roll < 0.25:
            doc.pop(self.rnd.choice(keys))
        elif roll < 0.45 and (added := f"n{self.rnd.randrange(9)}") not in doc:
            items = list(doc.items())
            items.insert(self.rnd.randrange(len(items) + 1), (added, self.value(2)))
            doc.clear()
            doc.update(items)
        elif keys and roll < 0.6 and (new_key := f"r{self.rnd.randrange(9)}") not in doc:
            old_key = self.rnd.choice(keys)
            renamed = {(new_key if k == old_key else k): v for k, v in doc.items()}
            doc.clear()
            doc.update(renamed)
        elif keys:
            key = self.rnd.choice(keys)
            if isinstance(doc[key], dict):
                self.edit(doc[key])
            else:
                doc[key] = self.value(2)


def test_random_edits_of_commented_documents_read_back_as_intended() -> None:
    documents = Documents(seed=15)
    for _ in range(300):
        newline = documents.rnd.choice(["\n", "\r\n"])
        start = {f"k{j}": documents.value(1) for j in range(documents.rnd.randrange(1, 5))}
        text = documents.text(start, "", newline)
        old = loads_keyed(text)
        new = copy.deepcopy(old)
        for _ in range(documents.rnd.randrange(1, 4)):
            documents.edit(new)
        out = rewrite(text.encode(), old, new)
        assert out is not None, text
        assert loads_keyed(out) == new, text
        if newline == "\r\n":
            assert out.count(b"\n") == out.count(b"\r\n")  # no bare LF mixed in
