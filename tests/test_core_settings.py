"""core.SettingsFile in-process: the document as shown, the mcp.* options, presets, a reload.

No socket: the rules of settings.* and presets.* as calls on the core (their wire stays tested
in tests/test_mcp_options_rpc.py, tests/test_reload.py and tests/test_registry_rpc.py).
"""

import pytest

from meworkd.base.errors import InvalidParams, InvalidSettings
from tests.core_parts import Core, core

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name


async def test_the_document_is_shown_with_secrets_masked(core: Core) -> None:
    await core.servers.add("one", {"command": "x", "env": {"API_KEY": "s3cret"}})
    shown = core.settings.get()
    assert "s3cret" not in str(shown["document"])
    assert (shown["path"], shown["errors"], shown["unreadable"]) == (str(core.path), [], None)
    assert core.servers.get("one", reveal=True)["server"]["env"] == {"API_KEY": "s3cret"}


async def test_setting_no_option_is_refused(core: Core) -> None:
    with pytest.raises(InvalidParams) as caught:
        await core.settings.set_mcp_options({"sampling": None, "max_reply_bytes": None})
    assert caught.value.message == "give at least one option to change"


async def test_options_given_are_set_and_the_rest_kept(core: Core) -> None:
    before = core.store.settings.mcp
    done = await core.settings.set_mcp_options({"sampling": True, "max_reply_bytes": None})
    assert done["mcp"]["sampling"] is True
    assert done["mcp"]["max_reply_bytes"] == before.max_reply_bytes
    with pytest.raises(InvalidSettings):
        await core.settings.set_mcp_options({"session_idle_minutes": -1})
    assert core.store.settings.mcp.session_idle_minutes == before.session_idle_minutes


async def test_presets_are_set_listed_and_removed(core: Core) -> None:
    await core.servers.add("k", {"command": "x"})
    made = await core.settings.set_preset("p", {"mcpServers": ["k"], "approvalLevel": "plan"})
    assert (made["name"], list(made["mcpServers"]), made["approvalLevel"]) == ("p", ["k"], "plan")
    assert [p["name"] for p in core.settings.presets()["presets"]] == ["p"]
    assert await core.settings.remove_preset("p") == {"removed": "p"}
    assert core.settings.presets() == {"presets": []}


async def test_a_reload_of_a_file_that_does_not_parse_keeps_the_last_good_settings(
    core: Core,
) -> None:
    await core.servers.add("k", {"command": "x"})
    core.path.write_text("{not json")
    reloaded = await core.settings.reload()
    assert reloaded["applied"] is False
    assert reloaded["error"]
    assert "k" in core.store.settings.servers
