"""RPC writes and hand edits of the settings file, interleaved (issue 8, part 4).

A seeded random schedule (``figures.RACE``) mixes RPC writes (``servers.add``, ``servers.update``
adding an unknown key, ``servers.setToolEnabled``), up to four in flight at once, with hand edits
made while they run: unknown top-level keys and whole servers, written in place (truncate and
write, like ``>``) or atomically (temp file and rename, like most editors). Every change is
distinct, so the end state says exactly what was lost. After every step the file must parse;
at the end every acknowledged RPC write must be in the file and in the daemon's view of it, and
so must every hand edit but those lost in meworkd's own window (below).

The test's own hand editor must not be the one that loses data, so it checks what it replaced:

* an atomic edit swaps its temp file in with ``renameat2(RENAME_EXCHANGE)`` and reads what it
  displaced; if that is not what it based the edit on, meworkd wrote in between, so it swaps
  meworkd's version back and starts over (like an editor that says "file changed on disk");
* an in-place edit checks that the path still names the inode it wrote; if meworkd renamed a new
  file over it meanwhile, the edit is made again on the new file.

meworkd does the same for its own writes (``SettingsStore``: swap, check what was displaced, swap
back and merge), so no hand edit may be lost at all. Before it did, a hand edit landing between
its re-read check and its rename was overwritten: about 0.5 % of the hand edits under this
schedule (``test_hand_edit_in_the_check_to_rename_window`` makes that moment happen on purpose).
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError

from tests.reliability import figures
from tests.reliability.harness import BOUND, DaemonProc, call

_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = _libc.renameat2
_renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
AT_FDCWD = -100
RENAME_EXCHANGE = 2
BASE_SERVERS = [f"b{i}" for i in range(5)]
MAX_IN_FLIGHT = 4


def exchange(a: Path, b: Path) -> None:
    if _renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


Edit = Callable[[dict[str, Any]], None]


def _apply(edit: Edit, data: bytes) -> bytes:
    doc = json.loads(data)
    edit(doc)
    return json.dumps(doc, indent=2).encode()


class HandEditor:
    """Edits like a person with a careful editor; counts how often meworkd wrote in between."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.hand~")
        self.raced = 0

    def atomic(self, edit: Edit) -> None:
        for _attempt in range(100):
            base = self.path.read_bytes()
            self.tmp.write_bytes(_apply(edit, base))
            self.tmp.chmod(0o600)
            exchange(self.tmp, self.path)
            displaced = self.tmp.read_bytes()
            if displaced == base:
                self.tmp.unlink()
                return
            # meworkd renamed its write in after our read: put it back, edit again.
            exchange(self.tmp, self.path)
            self.tmp.unlink()
            self.raced += 1
        raise AssertionError("an atomic hand edit kept racing")

    def in_place(self, edit: Edit, present: Callable[[dict[str, Any]], bool]) -> None:
        for _attempt in range(100):
            with self.path.open("r+b") as f:
                base = f.read()
                data = _apply(edit, base)
                f.seek(0)
                f.truncate()
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                same = os.stat(self.path).st_ino == os.fstat(f.fileno()).st_ino
            if same or present(json.loads(self.path.read_bytes())):
                return
            self.raced += 1  # our write went to a file meworkd had just replaced: again
        raise AssertionError("an in-place hand edit kept racing")


def _schedule(seed: int, steps: int) -> list[str]:
    rng = random.Random(seed)
    kinds = ["rpc_add", "rpc_update", "rpc_tool", "hand_key", "hand_server"]
    weights = [3, 3, 2, 3, 2]
    return rng.choices(kinds, weights, k=steps)


@pytest.mark.anyio
async def test_rpc_writes_and_hand_edits_interleaved(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    steps = figures.RACE["soak_steps"] if figures.SOAK else figures.RACE["steps"]
    rng = random.Random(figures.RACE["seed"] + 1)
    schedule = _schedule(figures.RACE["seed"], steps)
    d = spawn_daemon()
    d.write_settings(
        {name: {"command": "true"} for name in BASE_SERVERS}, extra={"x-before": "kept"}
    )
    await anyio.to_thread.run_sync(d.start)
    editor = HandEditor(d.settings)
    acked: list[tuple[str, str, str]] = []  # (kind, server, key) of acknowledged RPC writes
    hand: list[tuple[str, str]] = []  # (kind, key) of hand edits
    refused = 0
    in_flight = anyio.Semaphore(MAX_IN_FLIGHT)
    hand_editing = anyio.Lock()  # held while a hand edit runs

    async with d.connect() as client:

        async def rpc(step: int, kind: str) -> None:
            nonlocal refused
            try:
                if kind == "rpc_add":
                    method, params = (
                        "servers.add",
                        {
                            "name": f"r{step}",
                            "server": {"command": "true"},
                        },
                    )
                    target = (kind, f"r{step}", "")
                elif kind == "rpc_update":
                    server = rng.choice(BASE_SERVERS)
                    method, params = (
                        "servers.update",
                        {
                            "name": server,
                            "patch": {f"x-step-{step}": step},
                        },
                    )
                    target = (kind, server, f"x-step-{step}")
                else:
                    server = rng.choice(BASE_SERVERS)
                    method, params = (
                        "servers.setToolEnabled",
                        {
                            "name": server,
                            "tool": f"t{step}",
                            "enabled": False,
                        },
                    )
                    target = (kind, server, f"t{step}")
                for _attempt in range(50):
                    try:
                        await call(client, method, params)
                    except RpcError as exc:
                        # The file was caught half-written by an in-place hand edit: meworkd
                        # refuses rather than overwrite it; a client would simply retry.
                        if exc.kind != "settings_unreadable":
                            raise
                        refused += 1
                        # Retry once that hand edit is done: spinning instead could use up
                        # every attempt while a loaded machine holds the editor mid-write.
                        async with hand_editing:
                            pass
                        continue
                    acked.append(target)
                    return
                raise AssertionError(f"step {step}: refused 50 times")
            finally:
                in_flight.release()

        async with anyio.create_task_group() as tg:
            for step, kind in enumerate(schedule):
                if kind.startswith("rpc_"):
                    await in_flight.acquire()
                    tg.start_soon(rpc, step, kind)
                    await anyio.sleep(0)  # let it start: the next hand edit races with it
                else:
                    key = f"x-hand-{step}" if kind == "hand_key" else f"h{step}"

                    def edit(doc: dict[str, Any], kind: str = kind, key: str = key) -> None:
                        if kind == "hand_key":
                            doc[key] = {"step": key}
                        else:
                            doc["assets"]["mcpServers"][key] = {"command": "true"}

                    def present(doc: dict[str, Any], kind: str = kind, key: str = key) -> bool:
                        where = doc if kind == "hand_key" else doc["assets"]["mcpServers"]
                        return key in where

                    async with hand_editing:
                        if rng.random() < 0.5:
                            await anyio.to_thread.run_sync(editor.atomic, edit)
                        else:
                            await anyio.to_thread.run_sync(editor.in_place, edit, present)
                    hand.append((kind, key))
                # After every step the file is whole: it parses.
                json.loads(d.settings.read_bytes())

        file_doc = json.loads(d.settings.read_bytes())
        lost = _lost(file_doc, acked, hand)
        await call(client, "settings.reload")
        daemon_doc = (await call(client, "settings.get"))["document"]

    figures.record(
        "settings_races",
        steps=len(schedule),
        rpc_writes_acknowledged=len(acked),
        hand_edits=len(hand),
        rpc_writes_refused_mid_hand_edit=refused,
        hand_edits_redone_after_meworkd_wrote_in_between=editor.raced,
        rpc_writes_lost=len(lost["rpc"]),
        hand_edits_lost=len(lost["hand"]),
    )
    assert len(acked) + len(hand) == len(schedule)
    assert lost["rpc"] == [], f"acknowledged RPC writes lost: {lost['rpc']}"
    assert lost["hand"] == [], f"{len(lost['hand'])} of {len(hand)} hand edits overwritten"
    assert file_doc["x-before"] == "kept"
    daemon_lost = _lost(daemon_doc, acked, hand)
    assert daemon_lost["rpc"] == [], daemon_lost
    assert daemon_lost["hand"] == lost["hand"], daemon_lost
    assert stat.S_IMODE(d.settings.stat().st_mode) == 0o600


def _lost(
    doc: dict[str, Any], acked: list[tuple[str, str, str]], hand: list[tuple[str, str]]
) -> dict[str, list[Any]]:
    servers = doc["assets"]["mcpServers"]
    rpc_lost = []
    for kind, server, key in acked:
        entry = servers.get(server, {})
        ok = (
            server in servers
            if kind == "rpc_add"
            else key in entry
            if kind == "rpc_update"
            else key in entry.get("disabledTools", [])
        )
        if not ok:
            rpc_lost.append((kind, server, key))
    hand_lost = [
        (kind, key) for kind, key in hand if key not in (doc if kind == "hand_key" else servers)
    ]
    return {"rpc": rpc_lost, "hand": hand_lost}


@pytest.mark.anyio
@pytest.mark.parametrize("when", ["before the check", "between the check and the swap"])
async def test_hand_edit_in_the_check_to_rename_window(
    rel_tmp: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Make a hand edit land exactly when meworkd is about to put its own version in place.

    Fault injection around the store's swap (the real store, the real file system): the hand
    edit is an editor-style atomic replace made just before meworkd's ``renameat2`` runs. Until
    the store swapped and checked what it displaced, this edit was overwritten unseen.
    """
    from meworkd.base.events import EventBus
    from meworkd.settings import files as store_module
    from meworkd.settings.store import SettingsStore

    path = rel_tmp / "settings.json"
    path.write_text(json.dumps({"assets": {"mcpServers": {}}}))
    path.chmod(0o600)
    store = SettingsStore(path, EventBus())
    store.open()
    injected: list[bool] = []

    def hand_edit() -> None:
        if not injected:
            injected.append(True)
            doc = json.loads(path.read_bytes())
            doc["x-hand"] = "typed by a person"
            tmp = path.with_name(".hand~")
            tmp.write_text(json.dumps(doc))
            os.replace(tmp, path)

    if when == "before the check":
        store.before_rename = lambda _tmp: hand_edit()
    else:
        real_exchange = store_module._exchange

        def exchange_after_a_hand_edit(a: Path, b: Path) -> None:
            hand_edit()
            real_exchange(a, b)

        monkeypatch.setattr(store_module, "_exchange", exchange_after_a_hand_edit)

    def add(doc: dict[str, Any]) -> None:
        doc["assets"]["mcpServers"]["s"] = {"command": "true"}

    with anyio.fail_after(BOUND):
        await store.mutate(add)
    monkeypatch.undo()
    assert injected
    final = json.loads(path.read_bytes())
    assert "s" in final["assets"]["mcpServers"]
    assert final.get("x-hand") == "typed by a person", "the hand edit was overwritten"
    assert store.document().get("x-hand") == "typed by a person"
    assert not list(rel_tmp.glob(".settings.json.*")), "a temp file was left behind"
