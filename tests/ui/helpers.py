"""Helpers for the terminal UI tests: wait for a condition while the app keeps running."""

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from mework_client.aio import connect
from mework_ui.conversations import ConversationsScreen
from mework_ui.detail import DetailScreen
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from tests.daemon_helpers import PEERS

BOUND = 30.0  # a servers.test spawns a Python server: slow on a loaded 2-core machine
# A Node server starts in a third of the time of a Python one (no SDK import): the tests that
# only need some server with tools, prompts and resources use it.
EVERYTHING = str(PEERS / ".bin" / "mcp-server-everything")


async def until(pilot: Pilot[Any], condition: Callable[[], bool], bound: float = BOUND) -> None:
    """Let the app run until ``condition`` holds; replies arrive on their own schedule.

    The app runs on this loop, so a plain sleep lets it work; ``pilot.pause`` would also force
    a screen refresh on every poll, most of these tests' CPU time.
    """
    with anyio.fail_after(bound):
        while not condition():
            await anyio.sleep(0.02)
    await pilot.pause()


def cell(table: DataTable[Any], row: str, column: str) -> str:
    return str(table.get_cell(row, column)) if row in table.rows else ""


def move_to(table: DataTable[Any], row: str) -> None:
    table.move_cursor(row=table.get_row_index(row))


def text(app: App[Any], selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def entry(settings: Path, name: str) -> Any:
    return json.loads(settings.read_text())["assets"]["mcpServers"].get(name)


async def type_into(pilot: Pilot[Any], field: Input, value: str) -> None:
    field.focus()
    field.value = value
    await pilot.press("enter")


async def add_servers(socket: Path, servers: Mapping[str, Mapping[str, Any]]) -> None:
    """Register a test's own servers on the shared daemon."""
    async with connect(socket) as client:
        for name, server in servers.items():
            await client.call("servers.add", {"name": name, "server": dict(server)})


def everything(**fields: Any) -> dict[str, Any]:
    return {"type": "stdio", "command": EVERYTHING, **fields}


async def open_conversation(pilot: Pilot[Any], app: App[Any], conversation: str) -> None:
    """F3, then Enter on ``conversation``: its drawer, cards and checks are shown."""
    await pilot.press("f3")
    await until(pilot, lambda: isinstance(app.screen, ConversationsScreen))
    table = app.screen.query_one(DataTable)
    await until(pilot, lambda: conversation in table.rows)
    move_to(table, conversation)
    await pilot.press("enter")
    await until(pilot, lambda: f"{conversation}: why" in text(app, "#why"))


async def open_server(pilot: Pilot[Any], app: App[Any], name: str) -> None:
    """Enter on ``name`` in the servers list, once it is listed: its detail page is shown."""
    table = app.screen.query_one(DataTable)
    await until(pilot, lambda: name in table.rows)
    move_to(table, name)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen))
