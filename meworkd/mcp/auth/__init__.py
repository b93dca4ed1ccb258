"""OAuth for Streamable HTTP servers: the SDK's provider for logins, meworkd's for sessions."""

from meworkd.mcp.auth.bearer import BearerAuth
from meworkd.mcp.auth.login import login, redirect_port_for
from meworkd.mcp.auth.loopback import LoginFailed, LoopbackReceiver
from meworkd.mcp.auth.registry import AUTH_TOPIC, AuthRegistry, uses_oauth
from meworkd.mcp.auth.server import (
    AUTH_STATES,
    AuthStatus,
    LoginRequired,
    RefreshUnavailable,
    ServerAuth,
)
from meworkd.mcp.auth.store import AuthFile, auth_file_for

__all__ = [
    "AUTH_STATES",
    "AUTH_TOPIC",
    "AuthFile",
    "AuthRegistry",
    "AuthStatus",
    "BearerAuth",
    "LoginFailed",
    "LoginRequired",
    "LoopbackReceiver",
    "RefreshUnavailable",
    "ServerAuth",
    "auth_file_for",
    "login",
    "redirect_port_for",
    "uses_oauth",
]
