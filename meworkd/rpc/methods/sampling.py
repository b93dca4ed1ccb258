"""sampling.*: model completions servers ask for, answered by a frontend that runs the model."""

from typing import Any

from mework_protocol.params import NoParams, SamplingRespondParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("sampling.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.asks.pending_sampling()


@group.add("sampling.respond", SamplingRespondParams)
async def respond(s: Services, _conn: Connection, p: SamplingRespondParams) -> dict[str, Any]:
    return s.asks.respond_sampling(p.request_id, p.result, p.error)
