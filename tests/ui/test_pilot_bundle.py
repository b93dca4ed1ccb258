"""Add▾ → Install a bundle (.mcpb) (issue 29.2 from the UI): a bundle built from the suite's
envdump.py is previewed (what it needs, nothing unpacked), installed with its inputs, and its
tool answers; a file that is no bundle is refused with the daemon's words."""

from pathlib import Path

import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from mework_ui.bundle import BundleDialog
from textual.widgets import Input

from tests.daemon_helpers import begin_turn, call_tool, text_of
from tests.test_bundles import build
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import text, until

pytestmark = pytest.mark.anyio


async def test_a_bundle_is_previewed_then_installed_from_the_ui(
    ui_daemon: UiDaemon, short_tmp: Path
) -> None:
    bundle = build(short_tmp / "env-dump.mcpb")
    (short_tmp / "not-a-bundle.mcpb").write_text("hello")
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("a", "up", "enter")  # Add▾ → its last item: Install a bundle
        await until(pilot, lambda: isinstance(app.screen, BundleDialog))
        path = app.screen.query_one("#path", Input)
        path.value = str(short_tmp / "not-a-bundle.mcpb")
        await pilot.press("ctrl+e")
        await until(pilot, lambda: text(app, "#report").startswith("✘"))
        assert "zip" in text(app, "#report")
        path.value = bundle
        await pilot.press("ctrl+e")
        await until(pilot, lambda: "needs api_key" in text(app, "#report"))
        assert "bundle: env-dump 1.2.0" in text(app, "#report")
        inputs = app.screen.query_one("#inputs", Input)
        inputs.value = "api_key=k-123456 greeting=hello"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "✓ installed as env-dump" in text(app, "#report"))
    async with connect(ui_daemon.socket) as client:
        turn = await begin_turn(client, ["env-dump"])
        said = text_of(await call_tool(client, turn, "env-dump", "env"))
        assert '"GREETING": "hello"' in said
