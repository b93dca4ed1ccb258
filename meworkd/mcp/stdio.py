"""The stdio transport: a server child in its own process group, spoken to over its pipes.

meworkd's own, not the SDK's ``stdio_client``, because a host needs what that one hides: the
child's pid for the ledger and the group kill, stderr through a pipe into the log ring, a cap on
line sizes, and non-JSON stdout lines reported instead of passed on as exceptions.
"""

import contextlib
import os
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from subprocess import PIPE
from typing import Any

import anyio
import mcp_types as types
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from mcp.shared.message import SessionMessage

from meworkd.base.lines import LineSplitter, Oversized
from meworkd.base.procgroup import (
    SESSION_VAR,
    kill_tree,
    open_group,
    process_tree,
    stop_process,
    untrack,
)
from meworkd.mcp.budget import Outstanding
from meworkd.mcp.direct import DirectCalls
from meworkd.mcp.errors import STREAM_CLOSED, STREAM_ENDED, CommandNotFound
from meworkd.mcp.limits import apply_limits
from meworkd.mcp.sandbox import SandboxView, sandbox_argv
from meworkd.settings import ServerConfig
from meworkd.settings.envfile import read_env_file

__all__ = ["SAFE_ENV", "child_environment", "open_stdio"]

MAX_QUOTED_LINE = 64 * 1024  # a longer stray stdout line is reported by its size only
PIPE_READ_CHUNK = 64 * 1024
SAFE_ENV = ("HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "LANG", "TZ")


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


@asynccontextmanager
async def open_stdio(
    config: ServerConfig,
    environ: Mapping[str, str],
    *,
    on_stderr: Callable[[str], None],
    on_spawn: Callable[[int], None],
    graceful: Callable[[], bool],
) -> AsyncIterator[tuple["_PipeReader", "_PipeWriter", Process]]:
    """Spawn ``config`` (already expanded) in its own process group and speak MCP over stdio.

    On exit the child is stopped within a bound; at once (SIGKILL) when ``graceful()`` is false.

    Raises:
        FileNotFoundError: the command does not exist.
        PermissionError: the command is not executable.
        EnvFileUnreadable: the entry's ``envFile`` could not be read.
    """
    assert config.command is not None
    # Its values first, so the entry's own ``env`` takes precedence over the file.
    from_file = read_env_file(config.env_file, config.cwd) if config.env_file else {}
    # Set last so an entry's ``env`` cannot take another session's helpers for its own.
    session = secrets.token_hex(16)
    env = child_environment(environ, from_file | config.env) | {SESSION_VAR: session}
    cwd = _expand_user(config.cwd)
    argv, view = [config.command, *config.args], None
    if config.sandboxed:
        argv, view = sandbox_argv(config, env, cwd, environ)
    try:
        process = await open_group(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=cwd, env=env)
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == cwd:
            raise  # the working directory is what is missing
        searched = None if "/" in config.command else env.get("PATH", os.defpath)
        raise CommandNotFound(config.command, searched) from None
    await _recorded_and_limited(process, session, config, on_spawn)
    assert process.stdin is not None
    assert process.stdout is not None
    reader = _PipeReader(process.stdout, on_stderr)
    writer = _PipeWriter(process.stdin, reader)
    reader.direct = DirectCalls(writer.send_line, reader.outstanding)
    reader.sandbox = view

    async with anyio.create_task_group() as tg:
        assert process.stderr is not None
        tg.start_soon(_read_stderr, process.stderr, on_stderr)
        try:
            yield reader, writer, process
        finally:
            with anyio.CancelScope(shield=True):
                writer.close()
                await _stop(process, session, graceful=graceful())
            tg.cancel_scope.cancel()


async def _recorded_and_limited(
    process: Process, session: str, config: ServerConfig, on_spawn: Callable[[int], None]
) -> None:
    """Put the new process in the ledger and set its ``limits``; if either fails, it is stopped
    at once: never left running untracked or unlimited."""
    try:
        on_spawn(process.pid)
        if config.limits is not None and not config.sandboxed:  # (sandboxed: set inside)
            try:
                apply_limits(process.pid, config.limits)
            except OSError as exc:
                raise OSError(exc.errno, f"its limits could not be set ({exc.strerror})") from None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _stop(process, session, graceful=False)
        raise


async def _read_stderr(stream: ByteReceiveStream, on_stderr: Callable[[str], None]) -> None:
    splitter = LineSplitter(8192)
    try:
        async for chunk in stream:
            for line in splitter.feed(chunk):
                if isinstance(line, Oversized):
                    on_stderr(f"[meworkd] (a {line.size}-byte stderr line was cut)")
                else:
                    on_stderr(line.decode("utf-8", "replace").rstrip("\r"))
    except STREAM_CLOSED:
        pass


async def _stop(process: Process, session: str, *, graceful: bool) -> None:
    """Stop the server's group, then what of its tree left the group (setsid, double forks)."""
    tree = process_tree(process.pid, session)
    await stop_process(process, graceful=graceful)
    await kill_tree(tree)
    untrack(process.pid)


class _PipeReader:
    """The session's read stream for a stdio server: messages parsed from its stdout on demand.

    The SDK's receive loop reads the pipe itself, instead of a reader task handing each message
    over through a memory stream: one task switch less per message (bench B1). Lines that are
    not JSON-RPC are reported as the server's output and skipped, not passed on.

    No line is held beyond the largest budget of the requests in flight (``Outstanding``): a
    tool reply past ``mcp.max_reply_bytes`` is dropped as it arrives, not first read whole, and
    the call it answers is refused at once when the line names its id.

    Replies to the calls meworkd wrote itself (``direct``) and progress for them are settled
    here and never reach the SDK; when the stream ends those calls fail as the SDK's would.
    """

    def __init__(self, stdout: ByteReceiveStream, on_stderr: Callable[[str], None]) -> None:
        self._stdout = stdout
        self._on_stderr = on_stderr
        self.outstanding = Outstanding()
        self.direct: DirectCalls | None = None
        self.sandbox: SandboxView | None = None  # what the server's sandbox lets it see
        self._splitter = LineSplitter(self.outstanding.line_limit())
        self._lines: deque[bytes | Oversized] = deque()
        self._ended = False

    async def receive(self) -> SessionMessage:
        while True:
            while self._lines:
                message = self._parse(self._lines.popleft())
                if message is not None:
                    return message
            if self._ended:
                self._close_direct()
                raise anyio.EndOfStream
            try:
                chunk = await self._stdout.receive(PIPE_READ_CHUNK)
            except STREAM_ENDED:
                self._ended = True
                continue
            self._splitter.max_line = self.outstanding.line_limit()
            self._lines.extend(self._splitter.feed(chunk))

    def _parse(self, line: bytes | Oversized) -> SessionMessage | None:
        if isinstance(line, Oversized):
            limit = self._splitter.max_line
            self._on_stderr(
                f"[meworkd] ignored a {line.size}-byte message on stdout "
                f"(over the {limit}-byte limit)"
            )
            return self._to_sdk(self.outstanding.refuse(line.head, line.tail, limit))
        if not line.strip():
            return None
        response = _plain_parts(line)
        if response is not None:
            request_id, result = response
            self.outstanding.answered(request_id)
            if self.direct is not None and self.direct.settle(request_id, result):
                return None
            return SessionMessage(
                types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=request_id, result=result)
            )
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            # Whole or not at all: the sink redacts, then cuts; cut here, a secret's prefix
            # at the cut would be no secret to it.
            if len(line) > MAX_QUOTED_LINE:
                self._on_stderr(f"[meworkd] ignored a {len(line)}-byte non-JSON-RPC line on stdout")
            else:
                text = line.decode("utf-8", "replace")
                self._on_stderr(f"[meworkd] ignored a non-JSON-RPC line on stdout: {text}")
            return None
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.outstanding.answered(message.id)
        return self._to_sdk(SessionMessage(message))

    def _to_sdk(self, item: SessionMessage | None) -> SessionMessage | None:
        """``item`` for the SDK, or None when it settled (or reported) a direct call."""
        direct = self.direct
        if item is None or direct is None:
            return item
        message = item.message
        if isinstance(message, types.JSONRPCResponse):
            return None if direct.settle(message.id, message.result) else item
        if isinstance(message, types.JSONRPCError):
            return None if direct.settle(message.id, message.error) else item
        if (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/progress"
            and isinstance(message.params, dict)
            and direct.progress(message.params)
        ):
            return None
        return item

    def _close_direct(self) -> None:
        if self.direct is not None:
            self.direct.close()

    async def end(self) -> None:
        """End the stream now (the server stopped reading): a waiting receive returns EOF."""
        self._ended = True
        self._close_direct()
        with contextlib.suppress(anyio.BrokenResourceError, OSError):
            await self._stdout.aclose()

    def __aiter__(self) -> "_PipeReader":
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended = True
        self._close_direct()

    async def __aenter__(self) -> "_PipeReader":
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def _plain_response(line: bytes) -> types.JSONRPCResponse | None:
    """The line as a JSON-RPC response if it plainly is one, else None (pydantic decides)."""
    parts = _plain_parts(line)
    if parts is None:
        return None
    return types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=parts[0], result=parts[1])


def _plain_parts(line: bytes) -> tuple[types.RequestId, dict[str, Any]] | None:
    """(id, result) if the line plainly is a JSON-RPC response, else None (pydantic decides).

    Exactly ``jsonrpc`` "2.0", an ``id`` that is an int or a string and a ``result`` object:
    what JSONRPCResponse accepts, and no other member of the message union could. Most of what
    a server sends is that; checking it here costs a fraction of validating the union (bench
    B1). The result is checked against the negotiated revision's schema later (by the SDK, or
    for a direct call by :mod:`meworkd.mcp.tools`).
    """
    try:
        data = msgspec.json.decode(line)
    except (msgspec.MsgspecError, RecursionError):
        return None
    if (
        isinstance(data, dict)
        and len(data) == 3
        and data.get("jsonrpc") == "2.0"
        and type(data.get("id")) in (int, str)
        and isinstance(data.get("result"), dict)
    ):
        return data["id"], data["result"]
    return None


class _PipeWriter:
    """The session's write stream for a stdio server: each message goes straight into stdin.

    The pipe transport buffers what the pipe does not take at once (``send`` waits only above
    its high-water mark), so no writer task is needed and a request reaches the server without
    waiting for one to be scheduled (bench B1). Each message is one ``write``: messages from
    concurrent senders never interleave.
    """

    def __init__(self, stdin: ByteSendStream, reader: _PipeReader) -> None:
        self._stdin = stdin
        self._reader = reader
        self._closed = False

    async def send(self, message: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        self._reader.outstanding.sent(message.message)
        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        await self.send_line(data.encode() + b"\n")

    async def send_line(self, line: bytes) -> None:
        """Write one whole message line (the SDK's, or a direct call's)."""
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            await self._stdin.send(line)
        except STREAM_CLOSED:
            # The server stopped reading: end the session rather than wait for its output.
            self._closed = True
            await self._reader.end()
            raise anyio.BrokenResourceError from None

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> "_PipeWriter":
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()
