"""servers.install {bundle} (issue 29): an MCP bundle built here from a real small server (the
suite's stdlib-only envdump.py, a manifest of version 0.3) is checked, unpacked into the state
directory, its user_config asked and substituted, and called end to end; servers.remove takes
its folder. Bundles that are not zips, zip bombs, path traversal, links out of the folder and
unsupported manifests are each refused by name, with nothing written and nothing left."""

import hashlib
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mework_client.aio import connect

from meworkd.core.registry import bundles
from tests.daemon_helpers import SERVERS, begin_turn, call_tool, start_daemon, text_of
from tests.registry_examples import TEXT_EDITOR, text_editor_at
from tests.registry_fixture import registry_fixture
from tests.turn_helpers import rpc_error

pytestmark = pytest.mark.anyio

# MANIFEST.md (github.com/modelcontextprotocol/mcpb @27083dcf): the required fields, a python
# server run by its mcp_config, user_config with a sensitive key.
MANIFEST: dict[str, Any] = {
    "manifest_version": "0.3",
    "name": "env-dump",
    "display_name": "Env dump",
    "version": "1.2.0",
    "description": "Shows the environment and arguments it was started with",
    "author": {"name": "meworkd tests"},
    "server": {
        "type": "python",
        "entry_point": "server/envdump.py",
        "mcp_config": {
            "command": "python3",
            "args": ["${__dirname}/server/envdump.py"],
            "env": {"GREETING": "${user_config.greeting}", "API_KEY": "${user_config.api_key}"},
        },
    },
    "user_config": {
        "greeting": {"type": "string", "title": "Greeting", "description": "What to say"},
        "api_key": {
            "type": "string",
            "title": "API key",
            "description": "The service's key",
            "sensitive": True,
            "required": True,
        },
    },
    "compatibility": {"platforms": ["darwin", "win32", "linux"], "runtimes": {"python": ">=3"}},
}


def build(path: Path, manifest: object = MANIFEST, extra: dict[str, bytes] | None = None) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.write(SERVERS / "envdump.py", "server/envdump.py")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return str(path)


def leftovers(root: Path) -> list[str]:
    folder = root / "state" / "bundles"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def test_a_bundle_is_installed_called_and_removed_with_its_folder(short_tmp: Path) -> None:
    bundle = build(short_tmp / "env-dump.mcpb")
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        preview = await c.call("servers.install", {"bundle": bundle})
        assert preview["installed"] is False
        assert [i["id"] for i in preview["needsInputs"]] == ["api_key"]
        assert preview["needsInputs"][0]["secret"] is True
        assert leftovers(short_tmp) == []

        inputs = {"api_key": "k-123456", "greeting": "hello"}
        done = await c.call("servers.install", {"bundle": bundle, "inputs": inputs})
        assert done["installed"] is True
        assert done["name"] == "env-dump"
        (folder,) = leftovers(short_tmp)
        unpacked = short_tmp / "state" / "bundles" / folder
        assert (unpacked / "server" / "envdump.py").is_file()
        assert done["server"]["args"] == [f"{unpacked}/server/envdump.py"]
        assert done["server"]["env"] == {"GREETING": "hello", "API_KEY": "********"}
        assert done["server"]["installedFrom"] == {"bundle": str(unpacked)}

        tested = await c.call("servers.test", {"name": "env-dump"})
        assert tested["ok"] is True, tested
        turn = await begin_turn(c, ["env-dump"])
        env = json.loads(text_of(await call_tool(c, turn, "env-dump", "env")))
        assert env["GREETING"] == "hello"
        assert env["API_KEY"] == "[redacted]"  # the sensitive value, never shown

        await c.call("servers.remove", {"name": "env-dump"})
        assert leftovers(short_tmp) == []


async def test_a_sensitive_value_on_the_command_line_must_be_a_reference(
    short_tmp: Path,
) -> None:
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["server"]["mcp_config"]["args"].append("--key=${user_config.api_key}")
    bundle = build(short_tmp / "b.mcpb", manifest)
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        error = await rpc_error(
            c.call("servers.install", {"bundle": bundle, "inputs": {"api_key": "plain"}})
        )
        assert error.kind == "invalid_params"
        assert "give it as a ${VAR} reference" in error.message
        done = await c.call(
            "servers.install", {"bundle": bundle, "inputs": {"api_key": "${KEY}"}, "dryRun": True}
        )
        assert done["server"]["args"][-1] == "--key=${KEY}"


async def test_a_default_may_name_the_home_folder(short_tmp: Path) -> None:
    """MANIFEST.md: a user_config default may use ${HOME}, ${DESKTOP}, ${DOCUMENTS}."""
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["user_config"]["workdir"] = {
        "type": "directory",
        "title": "Work folder",
        "description": "Where it works",
        "default": "${HOME}/work",
    }
    manifest["server"]["mcp_config"]["args"].append("${user_config.workdir}")
    bundle = build(short_tmp / "home.mcpb", manifest)
    environ = {**os.environ, "HOME": "/home/someone"}
    async with start_daemon(short_tmp, {}, environ=environ) as (_d, sock), connect(sock) as c:
        inputs = {"api_key": "${K}"}
        done = await c.call("servers.install", {"bundle": bundle, "inputs": inputs, "dryRun": True})
        assert done["server"]["args"][-1] == "/home/someone/work"
        workdir = next(i for i in done["inputs"] if i["id"] == "workdir")
        assert workdir["default"] == "${HOME}/work"


def symlink_out(path: Path) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(MANIFEST))
        link = zipfile.ZipInfo("server/escape")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "../../../../etc")
    return str(path)


def bomb(path: Path) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(MANIFEST))
        z.writestr("server/zeros.bin", b"\0" * (3 * 1024 * 1024))
    return str(path)


def many(path: Path) -> str:
    return build(path, extra={f"f{i}.txt": b"x" for i in range(10)})


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: (p.write_bytes(b"not a zip at all"), str(p))[1], "not a zip archive"),
        (lambda p: build(p, extra={"../evil.txt": b"x"}), "reaches outside the bundle's folder"),
        (lambda p: build(p, extra={"/tmp/evil.txt": b"x"}), "absolute or non-portable path"),
        (symlink_out, "points outside the bundle"),
        (bomb, "more than 2 MiB unpacked"),
        (many, "more than 8 files"),
        (lambda p: build(p, {**MANIFEST, "manifest_version": "9.9"}), "manifest_version '9.9'"),
        (lambda p: build(p, {k: v for k, v in MANIFEST.items() if k != "author"}), "author.name"),
        (
            lambda p: build(p, {**MANIFEST, "compatibility": {"platforms": ["win32"]}}),
            "compatibility.platforms: win32",
        ),
        (
            lambda p: build(
                p,
                {
                    **MANIFEST,
                    "server": {
                        **MANIFEST["server"],
                        "mcp_config": {"command": "python3", "args": ["${GITHUB_TOKEN}"]},
                    },
                },
            ),
            "${GITHUB_TOKEN}, which is no bundle variable",
        ),
    ],
)
async def test_a_bad_bundle_is_refused_by_name_and_leaves_nothing(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch, make: Any, said: str
) -> None:
    # Small bounds, so a bomb of 3 MiB stands for one of gigabytes.
    monkeypatch.setattr(bundles, "MAX_BYTES", 2 * 1024 * 1024)
    monkeypatch.setattr(bundles, "MAX_FILES", 8)
    bundle = make(short_tmp / "bad.mcpb")
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        before = (short_tmp / "settings.json").read_bytes()
        error = await rpc_error(
            c.call("servers.install", {"bundle": bundle, "inputs": {"api_key": "${K}"}})
        )
        assert error.kind == "unusable_server_json", error.message
        assert said in error.message
        assert (short_tmp / "settings.json").read_bytes() == before
        assert leftovers(short_tmp) == []


async def test_the_unpacked_size_is_counted_while_written(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip whose headers understate an entry's size (the bounds read them) is still refused
    while it is unpacked, and leaves nothing."""
    bundle = bomb(short_tmp / "liar.mcpb")
    data = bytearray(Path(bundle).read_bytes())
    size = (3 * 1024 * 1024).to_bytes(4, "little")
    # The uncompressed size in the local header and the central directory, both set to 1.
    for at in [i for i in range(len(data) - 4) if data[i : i + 4] == size]:
        data[at : at + 4] = (1).to_bytes(4, "little")
    Path(bundle).write_bytes(bytes(data))
    monkeypatch.setattr(bundles, "MAX_BYTES", 2 * 1024 * 1024)
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        error = await rpc_error(
            c.call("servers.install", {"bundle": bundle, "inputs": {"api_key": "${K}"}})
        )
        assert error.kind == "unusable_server_json"
        assert leftovers(short_tmp) == []


async def test_a_registry_bundle_is_downloaded_checked_and_installed(short_tmp: Path) -> None:
    data = Path(build(short_tmp / "env-dump.mcpb")).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    with registry_fixture() as served:
        served.files["env-dump.mcpb"] = data
        url = f"{served.url}/files/env-dump.mcpb"
        served.publish(TEXT_EDITOR)  # the registry's own example: a GitHub release URL
        served.publish({**text_editor_at(url, digest), "name": "io.example/env-dump"})
        served.publish({**text_editor_at(url, "0" * 64), "name": "io.example/tampered"})
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            search = await c.call("servers.search", {"query": "text editing"})
            assert search["servers"][0]["name"] == TEXT_EDITOR["name"]
            assert search["servers"][0]["needs"]["runtimes"] == ["bundle"]
            inputs = {"api_key": "k-123456"}
            done = await c.call(
                "servers.install", {"name": "io.example/env-dump", "inputs": inputs}
            )
            assert done["installed"] is True
            origin = done["server"]["installedFrom"]
            assert origin["registry"] == served.url
            assert origin["name"] == "io.example/env-dump"
            assert origin["bundle"].startswith(str(short_tmp / "state" / "bundles"))
            tested = await c.call("servers.test", {"name": "env-dump"})
            assert tested["ok"] is True, tested

            before = (short_tmp / "settings.json").read_bytes()
            error = await rpc_error(
                c.call("servers.install", {"name": "io.example/tampered", "inputs": inputs})
            )
            assert error.kind == "unusable_server_json"
            assert "SHA-256 does not match" in error.message
            assert (short_tmp / "settings.json").read_bytes() == before
            assert len(leftovers(short_tmp)) == 1  # the first bundle's folder only
