"""approvals.* and audit.list: pending approval requests, answering one, the audit log."""

from typing import Any

from mework_protocol.params import AuditParams, NoParams, RespondParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("approvals.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.approvals.pending()


@group.add("approvals.respond", RespondParams)
async def respond(s: Services, _conn: Connection, p: RespondParams) -> dict[str, Any]:
    return s.approvals.respond(p.approval_id, p.decision, p.reason, p.scope)


@group.add("audit.list", AuditParams)
async def audit(s: Services, _conn: Connection, p: AuditParams) -> dict[str, Any]:
    return s.conversations.audit(p.conversation_id, p.limit)
