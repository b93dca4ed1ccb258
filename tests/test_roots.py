"""Roots (issue 17 point 4): a conversation carries file:// directories; roots/list answers them."""

import pytest

from tests.test_elicitation import asking
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    text_of,
)

pytestmark = pytest.mark.anyio


async def test_roots(mw: Harness) -> None:
    await mw.start(document({"a": asking()}))
    conv = await mw.call(
        "conversations.create",
        {"mcpServers": ["a"], "approvalLevel": "full_access", "roots": ["file:///home/me/proj"]},
    )
    assert conv["roots"] == ["file:///home/me/proj"]
    turn = await mw.begin(conv["id"])
    show = bound(turn, "a")["show_roots"]
    assert text_of(await mw.tool(turn, show)) == "proj=file:///home/me/proj"

    # A change is sent to the live session as notifications/roots/list_changed; the next
    # roots/list answers the new list.
    updated = await mw.call(
        "conversations.update", {"id": conv["id"], "roots": ["file:///srv/a/", "file:///tmp/b"]}
    )
    assert updated["roots"] == ["file:///srv/a/", "file:///tmp/b"]
    assert text_of(await mw.tool(turn, show)) == "a=file:///srv/a/, b=file:///tmp/b"

    bad = await rpc_error(
        mw.call("conversations.update", {"id": conv["id"], "roots": ["/home/me"]})
    )
    assert bad.data["kind"] == "invalid_params"
    assert "not a file:// URI" in bad.message
    await mw.call("conversations.update", {"id": conv["id"], "roots": []})
    assert text_of(await mw.tool(turn, show)) == "no roots"
