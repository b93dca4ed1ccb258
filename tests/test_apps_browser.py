"""``meworkctl view`` in a real browser (issue 27, section 2): Debian's headless Chromium driven by
Playwright for Python (no downloaded browser). The real daemon, the fixture server on
``mcp.server.apps`` (its stdlib twin ``apps_fake.py`` for the sandbox probes, where the server is
not the subject) and the official example server over real stdio, and ``meworkctl view`` as a
real process serving the page; without chromium or Playwright these tests skip.

With ``MEWORKD_SCREENSHOTS=<dir>`` the rendered views are saved there (docs/images/ holds them).
"""

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from tests.common import APPS_FAKE, APPS_VIEW, document
from tests.test_apps_peers import basic_server
from tests.turn_helpers import EVENT_TIMEOUT, Harness, bound, mw_fixture  # noqa: F401

pytestmark = pytest.mark.anyio

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
APPS = {
    "type": "stdio",
    "command": sys.executable,
    "args": [APPS_VIEW],
    "alwaysAllowTools": ["show_counter"],
}
APPS_STDLIB = {**APPS, "args": [APPS_FAKE]}
SHOTS = os.environ.get("MEWORKD_SCREENSHOTS")


def _playwright() -> Any:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install chromium): the browser tests skip")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install playwright)")
    return async_playwright


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, for the module's one browser


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    """One Chromium for the module (its start is most of a test's CPU); each test gets a
    context of its own, so no page state is shared."""
    async with _playwright()() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@asynccontextmanager
async def _browser_page(browser: Any) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport={"width": 900, "height": 700})
    try:
        page = await context.new_page()
        page.set_default_timeout(EVENT_TIMEOUT * 1000)
        yield page
    finally:
        await context.close()


@asynccontextmanager
async def _served(mw: Harness, call_id: str) -> AsyncIterator[str]:
    """``meworkctl view CALL_ID --no-browser`` running; its address."""
    command = [sys.executable, "-m", "mework_client.ctl", "--socket", str(mw.paths.socket)]
    process: Process = await anyio.open_process([*command, "view", call_id, "--no-browser"])
    try:
        assert process.stdout is not None
        with anyio.fail_after(EVENT_TIMEOUT):
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        yield line.decode().strip()
    finally:
        process.terminate()
        await process.wait()


async def _view_frame(page: Any) -> Any:
    await page.wait_for_selector("body[data-state=shown]")
    return page.frame_locator("#frame-box iframe").frame_locator("iframe")


async def _shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


async def _started_call(mw: Harness, server: dict[str, Any], tool: str, **arguments: Any) -> str:
    await mw.start(document({"apps": server}))
    conversation = await mw.conversation(["apps"], "request_approval")
    turn = await mw.begin(conversation)
    await mw.tool(turn, bound(turn, "apps")[tool], arguments, callId="view-1")
    return conversation


async def test_the_fixture_view_renders_and_calls_back_through_approvals(
    mw: Harness, browser: Any
) -> None:
    conversation = await _started_call(mw, APPS, "show_counter", start=3)
    async with _served(mw, "view-1") as url, _browser_page(browser) as page:
        await page.goto(url)
        view = await _view_frame(page)
        await view.locator("#result").filter(has_text="counter starts at 3").wait_for()
        assert await view.locator("#input").text_content() == '{"start":3}'
        assert await view.locator("body").get_attribute("data-host") == "meworkctl view"
        await _shot(page, "apps-view-fixture.png")
        for decision, expected in (("deny", "#error"), ("allow", "#bumped")):
            await view.locator("#bump").click()
            answer = page.locator(f"#approvals button[data-decision={decision}]")
            await answer.wait_for()
            if decision == "allow":
                await _shot(page, "apps-view-approval.png")
            await answer.click()
            if decision == "deny":
                await view.locator("#error").filter(has_text="not approved").wait_for()
            else:
                await view.locator(expected).filter(has_text="bumped 1").wait_for()
        await view.locator("#model-only").click()
        await view.locator("#error").filter(has_text="for the model only").wait_for()
    audit = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    assert [(e["tool"], e["origin"], e["decision"]) for e in audit] == [
        ("show_counter", "model", "allow"),
        ("bump", "app", "deny"),
        ("bump", "app", "allow"),
    ]


async def test_the_view_cannot_reach_the_network_the_host_page_or_the_top_window(
    mw: Harness, browser: Any
) -> None:
    await _started_call(mw, APPS_STDLIB, "show_counter")
    async with _served(mw, "view-1") as url, _browser_page(browser) as page:
        await page.goto(url)
        view = await _view_frame(page)
        await view.locator("#probe").click()
        await view.locator("#probes").filter(has_text="violations").wait_for()
        probes = json.loads(await view.locator("#probes").text_content())
        assert probes["fetch"] == "blocked"
        assert "connect-src" in probes["violations"]
        assert probes["hostPage"] == "blocked"
        assert probes["top"] == "blocked"
        assert page.url == url  # the top window was not navigated
        # A malformed bridge message is refused; the view keeps working.
        inner = page.frames[-1]
        await inner.evaluate("window.parent.postMessage({jsonrpc: '1.0', id: 7}, '*')")
        await page.locator("#log li", has_text="malformed message refused").wait_for(
            state="attached"
        )
        await view.locator("#say").click()
        await page.locator("#log li", has_text="← ui/message").wait_for(state="attached")
        await page.locator("#close").click()
        await page.wait_for_selector("body[data-state=closed]")


async def test_the_official_example_view_renders_and_calls_back(mw: Harness, browser: Any) -> None:
    server = {**basic_server(), "alwaysAllowTools": ["get-time"]}
    conversation = await _started_call(mw, server, "get-time")
    async with _served(mw, "view-1") as url, _browser_page(browser) as page:
        await page.goto(url)
        view = await _view_frame(page)
        time_shown = view.locator("#server-time")
        await time_shown.filter(has_text="20").wait_for()  # the call's result, an ISO time
        await _shot(page, "apps-view-basic-vanillajs.png")
        first = await time_shown.text_content()
        await view.locator("#get-time-btn").click()
        await page.locator("#log li", has_text="← tools/call").wait_for(state="attached")
        assert first
    audit = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    assert [e["origin"] for e in audit] == ["model", "app"]
