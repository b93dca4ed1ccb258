"""A daemon at ``--log-level debug`` whose log file sits beside its settings file.

Every watchfiles debug line ("changes detected", its timeouts) wrote the log, which changed the
watched directory, which made another line: the daemon spun for as long as debug logging was on.
Debug logging is meworkd's, not the file watcher's chatter.
"""

from __future__ import annotations

import json

import anyio
import pytest

from tests.reliability.harness import BOUND, FAKE, DaemonProc, daemon_dir, new_mark, server_entry

pytestmark = pytest.mark.anyio


async def test_debug_logging_beside_the_settings_does_not_feed_the_watcher() -> None:
    with daemon_dir() as root:
        daemon = DaemonProc(root)
        daemon.write_settings({})
        assert daemon.log_path.parent == daemon.settings.parent
        daemon.start(log_level="debug")
        try:
            async with daemon.connect() as client:
                await client.subscribe(["settings.reloaded"])
                # Two edits: the watcher passes a whole cycle after the first reload's own log
                # lines changed the directory, and would log that cycle (it logs before yielding).
                for name in ("first", "second"):
                    daemon.write_settings({name: server_entry(FAKE, mark=new_mark())})
                    with anyio.fail_after(BOUND):
                        _, reloaded = await client.next_event("settings.reloaded")
                    assert name in json.dumps(reloaded)
        finally:
            daemon.stop()
        chatter = [line for line in daemon.log_text().splitlines() if "watchfiles" in line]
        assert not chatter, chatter[:5]
