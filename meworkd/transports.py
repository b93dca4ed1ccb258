"""Connecting to MCP servers: a stdio transport that owns its process group, and Streamable HTTP.

The only module that talks to child processes and HTTP clients for MCP. The stdio transport is
meworkd's own (not the SDK's ``stdio_client``) because a host needs what that one hides: the
child's pid for the ledger and the group kill, stderr through a pipe into the log ring, a cap on
line sizes, and non-JSON stdout lines reported instead of passed on as exceptions.
"""

import functools
import os
import signal
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from subprocess import PIPE

import anyio
import httpx2
import mcp_types as types
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from meworkd.rpc.framing import LineSplitter, Oversized
from meworkd.settings import ServerConfig

__all__ = [
    "MAX_SERVER_LINE",
    "SAFE_ENV",
    "Connected",
    "child_environment",
    "kill_group",
    "open_http",
    "open_stdio",
]

MAX_SERVER_LINE = 32 * 1024 * 1024  # one JSON-RPC message from a server; more is a broken server
STDIN_EOF_GRACE = 1.0  # seconds a server gets to exit on its own once stdin closes
SIGTERM_GRACE = 1.5  # then SIGTERM to the group, then SIGKILL
_EXIT_POLL = 0.01
HTTP_CONNECT_TIMEOUT = 30.0
STREAM_BUFFER = 16  # messages queued between the session and a stdio server's pipes
HTTP_ERROR_TEXT = 200  # characters of an HTTP error body quoted in a start-up failure
HTTP_ERROR_BODY_MAX = 64 * 1024  # a longer error body is not read for quoting
SAFE_ENV = ("HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "LANG", "TZ")

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


@dataclass(slots=True)
class Connected:
    read: ReadStream | object
    write: WriteStream | object
    process: Process | None = None
    # HTTP only: the status and (start of the) body of the last error response. The SDK turns
    # a bare HTTP error into a JSON-RPC error without status or text ("Server returned an
    # error response"), so a start-up failure could not say "HTTP 401" without this.
    http_error: tuple[int, str] | None = None
    # Set when the handshake failed: a server that never started has nothing to shut down
    # gracefully, and the caller is waiting for the failure to be reported.
    abandoned: bool = False


def child_environment(environ: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The safe part of the daemon's environment plus the entry's ``env``."""
    env = {
        k: v
        for k, v in environ.items()
        if (k in SAFE_ENV or k.startswith(("LC_", "XDG_"))) and not v.startswith("()")
    }
    env.update(extra)
    return env


def _expand_user(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


async def _exited(process: Process, within: float) -> bool:
    with anyio.move_on_after(within):
        # Polled, not process.wait(): that also waits for pipe EOF, which a grandchild holding
        # our pipes would delay past the grace period.
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(_EXIT_POLL)
        return True
    return False


async def _stop(process: Process, *, graceful: bool = True) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group. Bounded; never raises.

    Not ``graceful``: SIGKILL the group at once.
    """
    if not graceful:
        kill_group(process.pid, signal.SIGKILL)
    try:
        if process.stdin is not None:
            await process.stdin.aclose()
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    if not await _exited(process, STDIN_EOF_GRACE):
        kill_group(process.pid, signal.SIGTERM)
        if not await _exited(process, SIGTERM_GRACE):
            kill_group(process.pid, signal.SIGKILL)
            await _exited(process, SIGTERM_GRACE)
    # Grandchildren outlive a leader that exits promptly; the group kill reaches them.
    kill_group(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        try:
            if stream is not None:
                await stream.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
    if process.returncode is not None:
        with anyio.move_on_after(SIGTERM_GRACE):
            await process.aclose()


@asynccontextmanager
async def open_stdio(
    config: ServerConfig,
    environ: Mapping[str, str],
    *,
    on_stderr: Callable[[str], None],
    on_spawn: Callable[[int], None],
) -> AsyncIterator[Connected]:
    """Spawn ``config`` (already expanded) in its own process group and speak MCP over stdio.

    Raises:
        FileNotFoundError: the command does not exist.
        PermissionError: the command is not executable.
    """
    assert config.command is not None
    process = await anyio.open_process(
        [config.command, *config.args],
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        cwd=_expand_user(config.cwd),
        env=child_environment(environ, config.env),
        start_new_session=True,
    )
    on_spawn(process.pid)
    # A small buffer instead of the SDK's zero: a message changes hands without waiting for the
    # other task to be scheduled (one loop pass less per message, bench B1), still bounded.
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](
        STREAM_BUFFER
    )
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](STREAM_BUFFER)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        splitter = LineSplitter(MAX_SERVER_LINE)
        async with read_send:
            try:
                async for chunk in process.stdout:
                    for line in splitter.feed(chunk):
                        if isinstance(line, Oversized):
                            on_stderr(
                                f"[meworkd] ignored a {line.size}-byte message on stdout "
                                f"(over the {MAX_SERVER_LINE}-byte limit)"
                            )
                            continue
                        if not line.strip():
                            continue
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(
                                line, by_name=False
                            )
                        except ValueError:
                            text = line[:200].decode("utf-8", "replace")
                            on_stderr(f"[meworkd] ignored a non-JSON-RPC line on stdout: {text}")
                            continue
                        await read_send.send(SessionMessage(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

    async def stdin_writer() -> None:
        assert process.stdin is not None
        async with write_receive:
            try:
                async for session_message in write_receive:
                    data = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send(data.encode() + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await read_send.aclose()  # the server stopped reading: end the session

    async def stderr_reader(stream: ByteReceiveStream) -> None:
        splitter = LineSplitter(8192)
        try:
            async for chunk in stream:
                for line in splitter.feed(chunk):
                    if isinstance(line, Oversized):
                        on_stderr(f"[meworkd] (a {line.size}-byte stderr line was cut)")
                    else:
                        on_stderr(line.decode("utf-8", "replace").rstrip("\r"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        assert process.stderr is not None
        tg.start_soon(stderr_reader, process.stderr)
        connected = Connected(read_receive, write_send, process)
        try:
            yield connected
        finally:
            with anyio.CancelScope(shield=True):
                write_send.close()
                read_receive.close()
                await _stop(process, graceful=not connected.abandoned)
            tg.cancel_scope.cancel()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # One context for every HTTP session: httpx2 builds a fresh one (CA store included, about
    # 850 KiB) per client otherwise, which made each pooled HTTP session cost ~900 KiB (bench B4).
    return httpx2.create_ssl_context()


def http_client_for(
    config: ServerConfig,
    on_response: Callable[[httpx2.Response], Awaitable[None]] | None = None,
) -> httpx2.AsyncClient:
    # httpx2's default 5 s read timeout would cut long tool calls short with a misleading error.
    read = max(300.0, config.timeout * 2)
    return httpx2.AsyncClient(
        headers=dict(config.headers),
        timeout=httpx2.Timeout(HTTP_CONNECT_TIMEOUT, read=read),
        verify=_tls_context(),
        follow_redirects=False,
        event_hooks={"response": [on_response]} if on_response is not None else None,
    )


@asynccontextmanager
async def open_http(config: ServerConfig) -> AsyncIterator[Connected]:
    assert config.url is not None
    connected = Connected(None, None)

    async def record_error(response: httpx2.Response) -> None:
        """Keep the status and the start of the body of an HTTP error (see ``Connected``)."""
        if response.status_code < 400:
            return
        text = ""
        size = response.headers.get("content-length", "")
        # Only a body of announced, small size: a chunked one might never end.
        if size.isdigit() and int(size) <= HTTP_ERROR_BODY_MAX:
            try:
                await response.aread()  # cached: the SDK may read the same body again
                text = " ".join(response.text.split())[:HTTP_ERROR_TEXT]
            except httpx2.HTTPError:
                pass
        connected.http_error = (response.status_code, text)

    async with (
        http_client_for(config, on_response=record_error) as http,
        streamable_http_client(config.url, http_client=http) as (read, write),
    ):
        connected.read, connected.write = read, write
        yield connected
