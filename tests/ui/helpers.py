"""Helpers for the terminal UI tests: wait for a condition while the app keeps running."""

from collections.abc import Callable
from typing import Any

import anyio
from textual.pilot import Pilot
from textual.widgets import DataTable

BOUND = 30.0  # a servers.test spawns a Python server: slow on a loaded 2-core machine


async def until(pilot: Pilot[Any], condition: Callable[[], bool], bound: float = BOUND) -> None:
    """Let the app run until ``condition`` holds; replies arrive on their own schedule."""
    with anyio.fail_after(bound):
        while not condition():
            await pilot.pause(0.02)


def cell(table: DataTable[Any], row: str, column: str) -> str:
    return str(table.get_cell(row, column)) if row in table.rows else ""


def move_to(table: DataTable[Any], row: str) -> None:
    table.move_cursor(row=table.get_row_index(row))
