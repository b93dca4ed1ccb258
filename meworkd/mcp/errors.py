"""The one map from foreign exceptions to meworkd's errors, failure reasons and isError texts.

Whatever the SDK, httpx2, pydantic, anyio or the operating system raise while connecting to or
talking to a server is classified here, by type, code or recorded HTTP status (never by the
text of a message), so nothing above ``meworkd.mcp`` sees a foreign exception.
"""

import errno
import os
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from meworkd.base.errors import MeworkError, ServerUnavailable
from meworkd.base.log import clip_redacted
from meworkd.base.procgroup import STREAM_ERRORS
from meworkd.mcp.auth.registry import uses_oauth
from meworkd.mcp.http import HTTP_ERROR_TEXT, HttpErrors
from meworkd.mcp.ledger import LedgerUnwritable
from meworkd.settings import ServerConfig
from meworkd.settings.envfile import EnvFileUnreadable

__all__ = [
    "STREAM_CLOSED",
    "STREAM_ENDED",
    "TALK_ERRORS",
    "CommandNotFound",
    "InvalidListing",
    "NotAToolResult",
    "SandboxUnavailable",
    "SessionGone",
    "TalkFailed",
    "call_failure_text",
    "describe_failure",
    "invalid_listing",
    "is_session_forgotten",
    "leaf",
    "login_needed",
    "server_error_text",
    "startup_failure",
    "talk_failure",
]

# A pipe or stream the other side closed (or that we closed): the end of a conversation.
STREAM_CLOSED = STREAM_ERRORS
STREAM_ENDED = (anyio.EndOfStream, *STREAM_CLOSED)


class CommandNotFound(FileNotFoundError):
    """A stdio server's command does not exist; ``searched`` is the PATH it was looked up in
    (the child's: meworkd's own unless the entry's ``env`` sets one), None for a path."""

    def __init__(self, command: str, searched: str | None) -> None:
        super().__init__(errno.ENOENT, "command not found", command)
        self.searched = searched


class SandboxUnavailable(MeworkError):
    """The server is to run sandboxed and cannot be (meworkd.mcp.sandbox): it is not run."""

    kind = "sandbox_unavailable"


class NotAToolResult(Exception):
    """The server's reply to tools/call does not have the shape of a tool result."""


# What talking to a server may raise besides meworkd's own errors; ``talk_failure`` maps each.
TALK_ERRORS = (MCPError, TimeoutError, OSError, httpx2.HTTPError, ValidationError, NotAToolResult)


class SessionGone(ServerUnavailable):
    """The session closed (server exited, connection lost, or meworkd closed it)."""


class InvalidListing(ServerUnavailable):
    """A ``*/list`` reply that does not follow the MCP schema (the SDK rejects the whole page).

    ``data["problems"]`` names the offending tools the way :func:`meworkd.core.probe.lint_tools`
    does, so Test connection can report them.
    """


class TalkFailed(ServerUnavailable):
    """A request to a server failed (see ``TALK_ERRORS``).

    ``message`` says why in general terms (a turn's failures, Test connection); ``call_text``
    is what the model reads when the request was a tool call.
    """

    def __init__(self, message: str, *, reason: str, call_text: str) -> None:
        super().__init__(message, reason=reason)
        self.call_text = call_text


def leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _safe_url(url: str | None) -> str:
    """The URL without credentials or query (a ``${TOKEN}`` may have been expanded there)."""
    if not url:
        return "the server"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def server_error_text(exc: MCPError) -> str:
    """A server's error reply in words, for a failure reason or a Test connection section."""
    # The TypeScript SDK writes its own "MCP error -32602: " into the message: say the code once.
    message = exc.message.removeprefix(f"MCP error {exc.code}: ")
    return f"the server answered with an error: {message} ({exc.code})"


def describe_failure(exc: BaseException, config: ServerConfig) -> tuple[str, str]:
    """(reason, plain message) for a connect/talk failure, with no Python internals."""
    exc = leaf(exc)
    if isinstance(exc, EnvFileUnreadable):
        return "env_file_unreadable", f"could not read envFile {exc.path}: {exc.reason}"
    if isinstance(exc, LedgerUnwritable):
        return (
            "ledger_unwritable",
            f"could not record the server's process, so it was stopped: {exc}",
        )
    if isinstance(exc, SandboxUnavailable):
        return "sandbox_unavailable", exc.message
    if isinstance(exc, CommandNotFound):
        if exc.searched is None:
            return "command_not_found", f"command not found: {config.command} (no such file)"
        return "command_not_found", (
            f"command not found: {config.command} (looked in meworkd's PATH={exc.searched}; "
            "give the full path, or set PATH in the entry's env or in meworkd's environment, "
            "e.g. systemctl --user set-environment PATH=...)"
        )
    if isinstance(exc, FileNotFoundError):
        # Spawning reports a missing working directory as ENOENT too, naming the directory.
        if config.cwd is not None and exc.filename == os.path.expanduser(config.cwd):
            return "bad_cwd", f"working directory does not exist: {config.cwd}"
        return "command_not_found", f"command not found: {config.command}"
    if isinstance(exc, PermissionError):
        return "permission_denied", f"permission denied running {config.command}"
    if isinstance(exc, NotADirectoryError):
        return "bad_cwd", f"working directory does not exist: {config.cwd}"
    if isinstance(exc, TimeoutError):
        return "timeout", f"timed out after {config.timeout:g} s"
    if isinstance(exc, httpx2.ConnectError):
        return "connect_failed", f"could not connect to {_safe_url(config.url)}: connection refused"
    if isinstance(exc, httpx2.TimeoutException):
        return "timeout", f"timed out talking to {_safe_url(config.url)}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return "http_status", f"HTTP {exc.response.status_code} from {_safe_url(config.url)}"
    if isinstance(exc, httpx2.HTTPError):
        return "http_error", f"HTTP error talking to {_safe_url(config.url)}: {type(exc).__name__}"
    if isinstance(exc, MCPError):
        return "protocol_error", server_error_text(exc)
    if isinstance(exc, OSError):
        return "os_error", f"could not start {config.command}: {exc.strerror or 'OS error'}"
    return "failed", f"connection failed ({type(exc).__name__})"


def startup_failure(
    exc: BaseException,
    config: ServerConfig,
    *,
    returncode: int | None,
    http: HttpErrors | None,
    secrets: Sequence[str] = (),
) -> tuple[str, str]:
    """(reason, message) for a session that did not start; ``returncode``: the child's, if any.

    ``secrets``: the server's own (an error body may quote the header it was sent); they are
    taken out of the quoted body before it is cut, so no prefix of one survives the cut.
    """
    reason, message = describe_failure(exc, config)
    inner = leaf(exc)
    if reason != "timeout" and returncode is not None:
        return "exited", f"the server exited with code {returncode} during start-up"
    if isinstance(inner, MCPError) and inner.code == CONNECTION_CLOSED and config.type == "stdio":
        return "exited", "the server closed its connection during start-up"
    if _answers_as_legacy_sse(reason, config, http):
        return "legacy_sse", (
            f"{_safe_url(config.url)} is an old HTTP+SSE endpoint; that transport is not "
            "supported: use the server's Streamable HTTP endpoint instead (often the same "
            "address ending in /mcp instead of /sse)"
        )
    if _answered_401(inner, http, config):
        return "auth_required", LOGIN_NEEDED  # an OAuth server without a (valid) login
    if reason == "protocol_error" and http is not None and http.last is not None:
        # The SDK reports an HTTP error status as a bare JSON-RPC error; say what it was.
        status, body = http.last
        text = clip_redacted(body, HTTP_ERROR_TEXT, secrets)
        return "http_status", f"HTTP {status} from {_safe_url(config.url)}" + (
            f": {text}" if text else ""
        )
    return reason, message


LOGIN_NEEDED = "the server needs a login (servers.login)"


def _answered_401(exc: BaseException, http: HttpErrors | None, config: ServerConfig) -> bool:
    return (
        isinstance(exc, MCPError) and http is not None and http.unauthorized and uses_oauth(config)
    )


def login_needed(
    exc: BaseException, server: str, config: ServerConfig, http: HttpErrors | None
) -> TalkFailed | None:
    """A request of a live session that an OAuth server answered 401 (the login could not be
    refreshed): whichever request met it, the handshake, a listing or a call, a login is what
    it needs, and it is ``auth_required`` like a session that could not start."""
    if not _answered_401(leaf(exc), http, config):
        return None
    text = f"The MCP server {server} needs a login; the user can log in and ask again."
    return TalkFailed(LOGIN_NEEDED, reason="auth_required", call_text=text)


def _answers_as_legacy_sse(reason: str, config: ServerConfig, http: HttpErrors | None) -> bool:
    """Whether a failed HTTP start-up met an old HTTP+SSE server (see :class:`HttpErrors`), or
    failed on an address whose path names that transport (``.../sse``)."""
    if config.type != "streamable_http" or http is None or reason == "connect_failed":
        return False
    path = urlsplit(config.url or "").path.rstrip("/")
    return http.legacy_sse or path.endswith("/sse")


def invalid_listing(what: str, exc: ValidationError) -> InvalidListing:
    """The schema errors of a ``what``/list page, as a message and (for tools) problems."""
    problems: list[dict[str, str]] = []
    details: list[str] = []
    for error in exc.errors()[:5]:
        loc = [str(part) for part in error["loc"]]
        item = f"#{loc[1]}" if len(loc) > 1 else "the reply"
        field = ".".join(loc[2:]) or ".".join(loc)
        # For a missing field pydantic reports the enclosing object as the input.
        parent = error.get("input") if error["type"] == "missing" else None
        if isinstance(parent, dict) and isinstance(parent.get("name"), str):
            item = f"{parent['name']!r} ({item})"
        details.append(f"{item}: {field}: {error['msg']}")
        if what == "tools" and len(loc) > 1:
            name = parent.get("name") if isinstance(parent, dict) else None
            missing_schema = error["type"] == "missing" and loc[2:] == ["inputSchema"]
            problems.append(
                {
                    "tool": str(name) if name is not None else item,
                    "problem": "missing_input_schema" if missing_schema else "invalid_tool",
                    "detail": f"{field}: {error['msg']}",
                }
            )
    wire = what.replace("resource_templates", "resources/templates")
    return InvalidListing(
        f"the server's {wire}/list reply does not follow the MCP schema ({'; '.join(details)})",
        reason="invalid_reply",
        problems=problems,
    )


def is_session_forgotten(exc: BaseException, http: HttpErrors | None) -> bool:
    """True when ``exc`` is the SDK's answer to an HTTP 404 on a request with our session id.

    A Streamable HTTP server that restarted or expired the session answers so (spec, "Session
    Management"); the client is to start a new session. Decided from the status the transport
    recorded, whatever the error's code or wording (the SDK says "Session terminated", servers
    with a JSON-RPC body say what they like).
    """
    return isinstance(leaf(exc), MCPError) and http is not None and http.session_forgotten


def talk_failure(exc: BaseException, server: str, config: ServerConfig) -> TalkFailed:
    """``exc`` (one of ``TALK_ERRORS``) as the project's error, with a tool call's isError text."""
    inner = leaf(exc)
    reason, message = describe_failure(inner, config)
    if isinstance(inner, ValidationError | NotAToolResult):
        # The reply is not a CallToolResult at all (e.g. content is not a list).
        text = f"The MCP server {server} sent a reply that is not a valid tool result."
    elif isinstance(inner, MCPError) and inner.code == REQUEST_TIMEOUT:
        text = (
            f"The call to {server} timed out after {config.timeout:g} s without a reply "
            "and was cancelled."
        )
    elif isinstance(inner, MCPError) and inner.code == CONNECTION_CLOSED:
        text = (
            f"The MCP server {server} closed the connection during the call (it may have "
            "crashed); it will be restarted on the next call."
        )
    elif isinstance(inner, MCPError):
        text = (
            f"The MCP server {server} answered with an error: {inner.message} (code {inner.code})"
        )
    else:
        text = _unavailable_text(server, message)
    return TalkFailed(message, reason=reason, call_text=text)


def _unavailable_text(server: str, message: str) -> str:
    return f"The MCP server {server} is unavailable: {message}"


def call_failure_text(exc: ServerUnavailable, server: str) -> str:
    """What the model reads when a tool call on ``server`` failed with ``exc``."""
    if isinstance(exc, TalkFailed):
        return exc.call_text
    return _unavailable_text(server, exc.message)
