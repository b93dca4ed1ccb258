"""elicitations.*: the forms and URLs servers ask a person for, and a frontend's answer."""

from typing import Any

from mework_protocol.params import ElicitationRespondParams, NoParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("elicitations.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.asks.pending_elicitations()


@group.add("elicitations.respond", ElicitationRespondParams)
async def respond(s: Services, _conn: Connection, p: ElicitationRespondParams) -> dict[str, Any]:
    return s.asks.respond_elicitation(p.elicitation_id, p.action, p.content)
