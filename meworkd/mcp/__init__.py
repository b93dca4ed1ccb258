"""Talking to MCP servers: the only package that imports mcp, mcp_types, httpx2 or pydantic.

Everything above it uses these names and sees plain data and MeworkError subclasses only.
"""

from meworkd.mcp.auth import AUTH_TOPIC, AuthRegistry, LoginFailed, LoginRequired
from meworkd.mcp.errors import InvalidListing, SessionGone, TalkFailed, call_failure_text
from meworkd.mcp.ledger import PidLedger
from meworkd.mcp.model import PeerInfo, ServerReport, ToolInfo
from meworkd.mcp.pool import LogWriter, SessionPool
from meworkd.mcp.report import describe
from meworkd.mcp.session import McpSession, SessionState
from meworkd.mcp.tools import ProgressSink, call_tool, list_tools

__all__ = [
    "AUTH_TOPIC",
    "AuthRegistry",
    "InvalidListing",
    "LogWriter",
    "LoginFailed",
    "LoginRequired",
    "McpSession",
    "PeerInfo",
    "PidLedger",
    "ProgressSink",
    "ServerReport",
    "SessionGone",
    "SessionPool",
    "SessionState",
    "TalkFailed",
    "ToolInfo",
    "call_failure_text",
    "call_tool",
    "describe",
    "list_tools",
]
