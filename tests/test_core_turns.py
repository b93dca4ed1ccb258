"""core.Turns in-process: a call whose frontend went away (turns.callTool's hang-up).

The hang-up itself, a real connection closed while its call waits, stays tested on the wire in
tests/test_call_outlives_caller.py.
"""

import pytest

from meworkd.base.errors import TurnNotFound
from tests.core_parts import Core, core

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name


async def test_a_caller_gone_after_its_turn_ended_is_no_error(core: Core) -> None:
    core.conversations.create("c", preset=None, servers=[], level=None, roots=None)
    turn = await core.turns.begin("c", None)
    core.turns.caller_gone(turn["turnId"], "call-1")  # nothing runs: nothing to cancel
    core.turns.end(turn["turnId"])
    core.turns.caller_gone(turn["turnId"], "call-1")  # the turn went first, its calls with it
    with pytest.raises(TurnNotFound):
        core.turns.cancel(turn["turnId"], "call-1")
