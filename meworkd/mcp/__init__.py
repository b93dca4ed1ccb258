"""Talking to MCP servers: the only package that imports mcp, mcp_types, httpx2 or pydantic.

Everything above it uses these names and sees plain data and MeworkError subclasses only.
"""

from meworkd.mcp.asks import CURRENT_CALL, AskOrigin, ServerAsksHost
from meworkd.mcp.auth import AUTH_TOPIC, AuthRegistry, LoginFailed, LoginRequired
from meworkd.mcp.errors import InvalidListing, SessionGone, TalkFailed, call_failure_text
from meworkd.mcp.inspect import (
    InspectionRequest,
    complete,
    get_prompt,
    list_prompts,
    list_resources,
    read_resource,
    run_inspection,
)
from meworkd.mcp.ledger import PidLedger
from meworkd.mcp.model import PeerInfo, ServerReport, ToolInfo
from meworkd.mcp.pool import LogWriter, SessionPool
from meworkd.mcp.report import describe
from meworkd.mcp.session import McpSession, SessionState
from meworkd.mcp.tasks import TaskOptions, TaskState, TaskTicket, TaskWatcher
from meworkd.mcp.tools import (
    CallClock,
    ProgressSink,
    call_tool,
    list_tools,
    resume_task,
    timed_out,
)
from meworkd.mcp.views import APP_MIME_TYPE, APPS_EXTENSION, MAX_VIEW_BYTES, read_raw
from meworkd.mcp.webget import get_bytes, get_json

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "AUTH_TOPIC",
    "CURRENT_CALL",
    "MAX_VIEW_BYTES",
    "AskOrigin",
    "AuthRegistry",
    "CallClock",
    "InspectionRequest",
    "InvalidListing",
    "LogWriter",
    "LoginFailed",
    "LoginRequired",
    "McpSession",
    "PeerInfo",
    "PidLedger",
    "ProgressSink",
    "ServerAsksHost",
    "ServerReport",
    "SessionGone",
    "SessionPool",
    "SessionState",
    "TalkFailed",
    "TaskOptions",
    "TaskState",
    "TaskTicket",
    "TaskWatcher",
    "ToolInfo",
    "call_failure_text",
    "call_tool",
    "complete",
    "describe",
    "get_bytes",
    "get_json",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "list_tools",
    "read_raw",
    "read_resource",
    "resume_task",
    "run_inspection",
    "timed_out",
]
