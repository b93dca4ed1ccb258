"""Running PermissionRequest hooks for one call and combining what they say.

A hook is a shell command that gets the request JSON on stdin and may allow or deny the call; a
crash, a timeout or unclear output is no decision, and any deny wins over any allow. The hooks
themselves were read and validated with the settings (:mod:`meworkd.settings.hooks`).
"""

import json
import os
import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream

from meworkd.base.procgroup import STREAM_ERRORS, close_process, open_group
from meworkd.settings import (
    PERMISSION_HOOKS_PATH,
    HookCommand,
    HookGroup,
    HookMatcher,
    compile_matcher,
    select_hooks,
)

__all__ = [
    "EVENT_NAME",
    "MAX_MESSAGE_CHARS",
    "MAX_OUTPUT_BYTES",
    "PERMISSION_MODES",
    "HookOutcome",
    "HookVerdict",
    "PermissionRequest",
    "interpret_output",
    "run_hooks",
    "run_permission_hooks",
]

MAX_OUTPUT_BYTES = 64 * 1024
MAX_MESSAGE_CHARS = 1000
EVENT_NAME = "PermissionRequest"
# After SIGKILL a process dies at once; the bound only guards against a wedged (D-state) child.
_REAP_SECONDS = 5.0
_READ_CHUNK = 65536

Behavior = Literal["allow", "deny"]
# Secrets out of a hook's text (the daemon's Redactor.redact); applied before any cut.
Redact = Callable[[str], str]


def _as_is(text: str) -> str:
    return text


class PermissionRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The call a hook is asked about; ``tool_name`` is the model-facing name."""

    conversation_id: str
    tool_name: str
    tool_input: dict[str, Any]
    permission_mode: str  # meworkd's approval level; the payload maps it to Claude Code's
    server: str
    tool: str
    cwd: str = ""


class HookOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one hook command did, for logs and the audit (no environment, no raw output)."""

    command: str
    behavior: Behavior | None
    note: str
    message: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    duration_ms: int = 0


class HookVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The combined result: any deny wins, else any allow, else no decision (``None``)."""

    behavior: Behavior | None = None
    message: str | None = None
    hook_command: str | None = None
    details: list[HookOutcome] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)


# --- output --------------------------------------------------------------------------------------


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A second "hookSpecificOutput" (or "behavior") must not silently override the first.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    return obj


def _clip(text: str, redact: Redact) -> str | None:
    # Redact first, then cut: a cut inside a secret would leave its prefix for anyone to read.
    text = redact(text.strip())[:MAX_MESSAGE_CHARS].strip()
    return text or None


def interpret_output(
    returncode: int,
    stdout: bytes,
    stderr: bytes,
    *,
    tool_input: object = None,
    stdout_truncated: bool = False,
    redact: Redact = _as_is,
) -> tuple[Behavior | None, str | None, str]:
    """Read a finished hook's result the way Claude Code does: (behavior, message, note).

    Exit 2 denies with stderr as the reason; exit 0 with exactly one JSON document holding
    ``hookSpecificOutput.decision.behavior`` decides; everything else is no decision.
    """
    if returncode < 0:
        return None, None, f"killed by signal {-returncode}: no decision"
    if returncode == 2:
        return "deny", _clip(stderr.decode("utf-8", "replace"), redact), "exit code 2: deny"
    if returncode != 0:
        return None, None, f"exit code {returncode}: no decision"
    if stdout_truncated:
        return None, None, f"stdout exceeds {MAX_OUTPUT_BYTES} bytes: no decision"
    if not stdout.strip():
        return None, None, "no output: no decision"
    try:
        doc = json.loads(stdout.decode("utf-8"), object_pairs_hook=_reject_duplicate_keys)
    except (ValueError, RecursionError):
        return None, None, "stdout is not exactly one JSON document: no decision"
    specific = doc.get("hookSpecificOutput") if isinstance(doc, dict) else None
    if not isinstance(specific, dict):
        return None, None, "no hookSpecificOutput: no decision"
    if specific.get("hookEventName", EVENT_NAME) != EVENT_NAME:
        return None, None, "hookSpecificOutput is for another event: no decision"
    decision = specific.get("decision")
    behavior = decision.get("behavior") if isinstance(decision, dict) else None
    if not isinstance(decision, dict) or behavior not in ("allow", "deny"):
        return None, None, "no decision.behavior of allow or deny: no decision"
    if behavior == "deny":
        message = decision.get("message")
        clipped = _clip(message, redact) if isinstance(message, str) else None
        return "deny", clipped, "decision: deny"
    # Allowing the call with the original arguments when the hook approved other ones would be
    # wrong, and rewriting arguments is not supported, so ask the user instead.
    updated = decision.get("updatedInput")
    if updated is not None and updated != tool_input:
        return None, None, "allow with updatedInput is not supported: no decision"
    return "allow", None, "decision: allow"


# --- runner --------------------------------------------------------------------------------------


class _Capture:
    """Keeps MAX_OUTPUT_BYTES of a stream and drops the rest, still reading so no child blocks."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.truncated = False

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        while True:
            try:
                chunk = await stream.receive(_READ_CHUNK)
            except (anyio.EndOfStream, *STREAM_ERRORS):
                return
            room = MAX_OUTPUT_BYTES - len(self.data)
            if len(chunk) > room:
                self.truncated = True
            self.data += chunk[: max(room, 0)]


async def _feed(stream: ByteSendStream | None, payload: bytes) -> None:
    if stream is None:
        return
    try:
        await stream.send(payload)
    except STREAM_ERRORS:
        pass  # the hook exited or closed stdin without reading it: its output still counts
    try:
        await stream.aclose()
    except STREAM_ERRORS:
        pass


def _expand_home(command: str) -> str:
    if not command.startswith("~/"):
        return command
    home = os.path.expanduser("~")
    if home == "~":
        return command
    # Quoted so a home directory with spaces stays one word; sh joins 'a b'/rest into one.
    return shlex.quote(home) + command[1:]


async def _run_one(
    hook: HookCommand, payload: bytes, cwd: str | None, tool_input: object, redact: Redact
) -> HookOutcome:
    started = time.monotonic()

    def elapsed_ms() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        # Shielded: a spawn cancelled halfway kills only the shell, and what it already started
        # would escape; once spawned, the finally below kills the whole group instead.
        with anyio.CancelScope(shield=True):
            process = await open_group(["/bin/sh", "-c", _expand_home(hook.command)], cwd=cwd)
    except OSError as exc:
        return HookOutcome(
            command=hook.command,
            behavior=None,
            note=f"could not start: {exc.strerror or type(exc).__name__}",
            duration_ms=elapsed_ms(),
        )
    stdout, stderr = _Capture(), _Capture()
    returncode: int | None = None
    try:
        with anyio.move_on_after(hook.timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, process.stdin, payload)
                tg.start_soon(stdout.drain, process.stdout)
                tg.start_soon(stderr.drain, process.stderr)
            returncode = await process.wait()
    finally:
        # Timed out or cancelled: the hook and everything it started go, as one process group.
        await close_process(process, kill=returncode is None, within=_REAP_SECONDS)
    if returncode is None:
        return HookOutcome(
            command=hook.command,
            behavior=None,
            note=f"timed out after {hook.timeout:g} s: no decision",
            timed_out=True,
            duration_ms=elapsed_ms(),
        )
    behavior, message, note = interpret_output(
        returncode,
        bytes(stdout.data),
        bytes(stderr.data),
        tool_input=tool_input,
        stdout_truncated=stdout.truncated,
        redact=redact,
    )
    return HookOutcome(
        command=hook.command,
        behavior=behavior,
        message=message,
        note=note,
        exit_code=returncode if returncode >= 0 else None,
        signal=-returncode if returncode < 0 else None,
        duration_ms=elapsed_ms(),
    )


async def _is_dir(path: str) -> bool:
    if not path:
        return False
    try:
        return await anyio.Path(path).is_dir()
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return False


# Claude Code's permission_mode for each approval level: hooks written for it read these values.
# An unknown level maps to "default" (the mode that asks).
PERMISSION_MODES = {
    "request_approval": "default",
    "allow_edits": "acceptEdits",
    "plan": "plan",
    "full_access": "bypassPermissions",
}


def _payload(request: PermissionRequest) -> bytes:
    return msgspec.json.encode(
        {
            "hook_event_name": EVENT_NAME,
            "session_id": request.conversation_id,
            "tool_name": request.tool_name,
            "tool_input": request.tool_input,
            "permission_mode": PERMISSION_MODES.get(request.permission_mode, "default"),
            "approval_level": request.permission_mode,
            "cwd": request.cwd,
            "mcp_server": request.server,
            "mcp_tool": request.tool,
        }
    )


def _select(
    matchers: Sequence[HookMatcher], tool_name: str, errors: list[str]
) -> list[HookCommand]:
    groups: list[HookGroup] = []
    for i, group in enumerate(matchers):
        compiled = compile_matcher(group.matcher)
        if isinstance(compiled, str):
            errors.append(f"{PERMISSION_HOOKS_PATH}[{i}].matcher: {compiled}")
            continue
        groups.append(HookGroup(group, compiled))
    return select_hooks(groups, tool_name)


async def run_permission_hooks(
    matchers: Sequence[HookMatcher], request: PermissionRequest, redact: Redact = _as_is
) -> HookVerdict:
    """Run every hook whose matcher (as written, compiled here) selects ``request.tool_name``.

    Settings loaded by the daemon hold their matchers compiled (:class:`HookSet`), and the gate
    calls :func:`run_hooks` with the hooks it selected; this form takes matcher groups as given.
    """
    errors: list[str] = []
    selected = _select(matchers, request.tool_name, errors)
    return await run_hooks(selected, request, errors, redact=redact)


async def run_hooks(
    hooks: Sequence[HookCommand],
    request: PermissionRequest,
    errors: Sequence[str] = (),
    *,
    redact: Redact = _as_is,
) -> HookVerdict:
    """Run ``hooks`` for ``request``, concurrently, and combine what they say.

    Each hook is bounded by its own timeout; a cancelled caller kills every hook's process group
    before this returns. ``errors`` are reported in the verdict as they are.
    """
    problems = list(errors)
    if not hooks:
        return HookVerdict(errors=problems)
    try:
        payload = _payload(request)
    except (TypeError, msgspec.EncodeError) as exc:
        problems.append(f"the request cannot be encoded as JSON: {exc}")
        return HookVerdict(errors=problems)
    cwd = request.cwd if await _is_dir(request.cwd) else None
    outcomes: list[HookOutcome | None] = [None] * len(hooks)

    async def run(index: int, hook: HookCommand) -> None:
        outcomes[index] = await _run_one(hook, payload, cwd, request.tool_input, redact)

    async with anyio.create_task_group() as tg:
        for index, hook in enumerate(hooks):
            tg.start_soon(run, index, hook)
    details = [o for o in outcomes if o is not None]
    for behavior in ("deny", "allow"):
        winner = next((o for o in details if o.behavior == behavior), None)
        if winner is not None:
            return HookVerdict(
                behavior=winner.behavior,
                message=winner.message,
                hook_command=winner.command,
                details=details,
                errors=problems,
            )
    return HookVerdict(details=details, errors=problems)
