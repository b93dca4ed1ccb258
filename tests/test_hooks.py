"""PermissionRequest hooks: settings, matchers, output rules, and real hook scripts end to end."""

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import msgspec
import psutil
import pytest

from meworkd.core.approvals.hook_runner import (
    MAX_MESSAGE_CHARS,
    MAX_OUTPUT_BYTES,
    HookVerdict,
    PermissionRequest,
    interpret_output,
    run_permission_hooks,
)
from meworkd.settings.hooks import (
    HookCommand,
    HookMatcher,
    matcher_error,
    matcher_matches,
    parse_permission_hooks,
)

NAME = "mcp__docs_3b7a2c__search__9f00aa"


def decision(behavior: str, **extra: object) -> str:
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": behavior, **extra},
            }
        }
    )


ALLOW = decision("allow")


# --- matchers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "name", "expected"),
    [
        ("", NAME, True),
        ("*", NAME, True),
        (NAME, NAME, True),  # names-only: exact
        ("mcp__docs", NAME, False),  # names-only is never a prefix
        ("search", NAME, False),
        (f"Bash|{NAME}", NAME, True),
        (f"Bash, {NAME} ,Write", NAME, True),
        ("Bash|Write", NAME, False),
        ("mcp__docs_.*", NAME, True),  # regex, unanchored search
        ("mcp__files_.*", NAME, False),
        ("__search__", NAME, False),  # names-only characters: exact, so no match...
        ("__search__.*", NAME, True),  # ...but with a regex character it is a search
        ("^mcp__docs_3b7a2c__search__9f00aa$", NAME, True),
        ("^search", NAME, False),
        ("MCP__.*", NAME, False),  # case-sensitive
        ("mcp__(", NAME, False),  # invalid regex matches nothing
        ("[", NAME, False),
    ],
)
def test_matcher_matches(matcher: str, name: str, expected: bool) -> None:
    assert matcher_matches(matcher, name) is expected


@pytest.mark.parametrize(("matcher", "bad"), [("", False), ("a|b", False), (".*", False)])
def test_matcher_error_valid(matcher: str, bad: bool) -> None:
    assert (matcher_error(matcher) is not None) is bad


@pytest.mark.parametrize("matcher", ["mcp__(", "[", "a{2,1}", "(?P<x>a)(?P<x>b)"])
def test_matcher_error_invalid(matcher: str) -> None:
    error = matcher_error(matcher)
    assert error is not None
    assert error.startswith("invalid regular expression")


# --- settings --------------------------------------------------------------------------------


def test_parse_valid_settings() -> None:
    raw = [
        {"matcher": "mcp__docs_.*", "hooks": [{"type": "command", "command": "a", "timeout": 10}]},
        {
            "hooks": [
                {"type": "command", "command": "b"},
                {"type": "command", "command": "c", "timeout": 0.5},
            ]
        },
        {"matcher": None, "hooks": [{"type": "command", "command": "d", "statusMessage": "x"}]},
    ]
    matchers, errors = parse_permission_hooks(raw)
    assert errors == []
    assert matchers == [
        HookMatcher(matcher="mcp__docs_.*", hooks=(HookCommand(command="a", timeout=10.0),)),
        HookMatcher(
            matcher="",
            hooks=(HookCommand(command="b", timeout=60.0), HookCommand(command="c", timeout=0.5)),
        ),
        HookMatcher(matcher="", hooks=(HookCommand(command="d"),)),
    ]


def test_structs_validate_with_msgspec() -> None:
    raw = [{"matcher": "x", "hooks": [{"type": "command", "command": "a", "timeout": 1}]}]
    assert msgspec.convert(raw, list[HookMatcher]) == [
        HookMatcher(matcher="x", hooks=(HookCommand(command="a", timeout=1.0),))
    ]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert([{"hooks": [{"command": "a", "timeout": 0}]}], list[HookMatcher])
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert([{"hooks": [{"type": "http", "command": "a"}]}], list[HookMatcher])


@pytest.mark.parametrize("raw", [None, []])
def test_parse_absent_or_empty(raw: object) -> None:
    assert parse_permission_hooks(raw) == ([], [])


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({}, "hooks.PermissionRequest: expected a list"),
        ("x", "hooks.PermissionRequest: expected a list"),
        ([1], "hooks.PermissionRequest[0]: expected an object"),
        ([{"matcher": 3, "hooks": []}], "hooks.PermissionRequest[0].matcher: expected a string"),
        ([{"matcher": "("}], "hooks.PermissionRequest[0].matcher: invalid regular expression"),
        ([{"matcher": "x"}], "hooks.PermissionRequest[0].hooks: expected a list"),
        ([{"hooks": {}}], "hooks.PermissionRequest[0].hooks: expected a list"),
        ([{"hooks": ["x"]}], "hooks.PermissionRequest[0].hooks[0]: expected an object"),
        (
            [{"hooks": [{"command": "a"}]}],
            'hooks.PermissionRequest[0].hooks[0].type: expected "command"',
        ),
        (
            [{"hooks": [{"type": "http", "url": "http://x"}]}],
            "hooks.PermissionRequest[0].hooks[0].type: unsupported hook type 'http'",
        ),
        (
            [{"hooks": [{"type": "command"}]}],
            "hooks.PermissionRequest[0].hooks[0].command: expected a non-empty string",
        ),
        (
            [{"hooks": [{"type": "command", "command": "  "}]}],
            "hooks.PermissionRequest[0].hooks[0].command: expected a non-empty string",
        ),
        (
            [{"hooks": [{"type": "command", "command": "a", "args": ["-x"]}]}],
            "hooks.PermissionRequest[0].hooks[0].args: not supported",
        ),
        (
            [{"hooks": [{"type": "command", "command": "a", "if": "Bash(rm *)"}]}],
            "hooks.PermissionRequest[0].hooks[0].if: not supported",
        ),
        (
            [{"hooks": [{"type": "command", "command": "a", "async": True}]}],
            "hooks.PermissionRequest[0].hooks[0].async: not supported",
        ),
        (
            [{"hooks": [{"type": "command", "command": "a", "shell": "powershell"}]}],
            "hooks.PermissionRequest[0].hooks[0].shell:",
        ),
    ],
)
def test_parse_errors(raw: object, error: str) -> None:
    matchers, errors = parse_permission_hooks(raw)
    assert matchers == []
    assert errors
    assert errors[0].startswith(error), errors


@pytest.mark.parametrize("timeout", [0, -1, "10", None, True, [], float("inf"), float("nan")])
def test_parse_bad_timeout(timeout: object) -> None:
    raw = [
        {
            "hooks": [
                {"type": "command", "command": "ok"},
                {"type": "command", "command": "bad", "timeout": timeout},
            ]
        }
    ]
    matchers, errors = parse_permission_hooks(raw)
    assert errors == ["hooks.PermissionRequest[0].hooks[1].timeout: expected number > 0"]
    # The valid sibling is kept.
    assert matchers == [HookMatcher(hooks=(HookCommand(command="ok"),))]


def test_parse_reports_every_problem_and_keeps_good_groups() -> None:
    raw = [
        {"matcher": "[", "hooks": [{"type": "command", "command": "a"}]},
        {"matcher": "ok", "hooks": [{"type": "command", "command": "b"}]},
        {"hooks": [{"type": "prompt", "prompt": "x", "timeout": -1}]},
    ]
    matchers, errors = parse_permission_hooks(raw)
    assert matchers == [HookMatcher(matcher="ok", hooks=(HookCommand(command="b"),))]
    assert [e.split(":")[0] for e in errors] == [
        "hooks.PermissionRequest[0].matcher",
        "hooks.PermissionRequest[2].hooks[0].type",
        "hooks.PermissionRequest[2].hooks[0].command",
        "hooks.PermissionRequest[2].hooks[0].timeout",
    ]


# --- output rules (pure) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "behavior", "message"),
    [
        (0, ALLOW, "", "allow", None),
        (0, ALLOW + "\n", "noise", "allow", None),
        (0, decision("deny"), "", "deny", None),
        (0, decision("deny", message="  no way  "), "", "deny", "no way"),
        (0, decision("deny", message=5), "", "deny", None),
        (0, decision("deny", interrupt=True), "", "deny", None),
        (0, decision("allow", updatedPermissions=[{"type": "setMode"}]), "", "allow", None),
        (0, decision("allow", updatedInput={"q": "x"}), "", "allow", None),  # unchanged input
        (0, decision("allow", updatedInput={"q": "y"}), "", None, None),
        (0, decision("ask"), "", None, None),
        (0, decision("Allow"), "", None, None),
        (0, decision("allow").replace("PermissionRequest", "PreToolUse"), "", None, None),
        (0, '{"hookSpecificOutput": {"permissionDecision": "allow"}}', "", None, None),
        (0, '{"decision": {"behavior": "allow"}}', "", None, None),
        (0, '{"hookSpecificOutput": {"decision": "allow"}}', "", None, None),
        (0, '{"hookSpecificOutput": []}', "", None, None),
        (0, "[1]", "", None, None),
        (0, '"allow"', "", None, None),
        (0, "", "", None, None),
        (0, " \n\t", "", None, None),
        (0, "allow", "", None, None),
        (0, ALLOW[:-1], "", None, None),
        (0, ALLOW + "\n" + ALLOW, "", None, None),
        (0, decision("deny") + "\n" + ALLOW, "", None, None),
        (0, ALLOW + "\n" + decision("deny"), "", None, None),
        (0, "hello\n" + ALLOW, "", None, None),
        # Two decisions in one document: a duplicate key must not flip the first.
        (
            0,
            '{"hookSpecificOutput": {"decision": {"behavior": "deny", "behavior": "allow"}}}',
            "",
            None,
            None,
        ),
        (0, "[" * 100_000, "", None, None),
        (2, "", "  not allowed here \n", "deny", "not allowed here"),
        (2, ALLOW, "", "deny", None),
        (1, ALLOW, "", None, None),
        (127, "", "sh: nope: not found", None, None),
        (-9, ALLOW, "", None, None),
        (-11, "", "", None, None),
    ],
)
def test_interpret_output(
    code: int, stdout: str, stderr: str, behavior: str | None, message: str | None
) -> None:
    got_behavior, got_message, note = interpret_output(
        code, stdout.encode(), stderr.encode(), tool_input={"q": "x"}
    )
    assert (got_behavior, got_message) == (behavior, message)
    assert note


def test_interpret_caps_the_reason() -> None:
    _, message, _ = interpret_output(2, b"", b"x" * 5000)
    assert message == "x" * MAX_MESSAGE_CHARS
    _, message, _ = interpret_output(0, decision("deny", message="y" * 5000).encode(), b"")
    assert message == "y" * MAX_MESSAGE_CHARS


def test_interpret_non_utf8() -> None:
    assert interpret_output(0, b"\xff" + ALLOW.encode(), b"")[0] is None
    assert interpret_output(2, b"", b"bad \xff byte")[0] == "deny"


def test_interpret_truncated_stdout_is_no_decision() -> None:
    assert interpret_output(0, ALLOW.encode(), b"", stdout_truncated=True)[0] is None


# --- real hook scripts -------------------------------------------------------------------------


def write_script(directory: Path, name: str, body: str) -> str:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def emit(text: str) -> str:
    return f"cat >/dev/null\nprintf '%s\\n' {sh_quote(text)}\n"


def make_request(cwd: Path, **changes: Any) -> PermissionRequest:
    fields: dict[str, Any] = {
        "conversation_id": "conv-1",
        "tool_name": NAME,
        "tool_input": {"q": "x", "n": 3, "nested": {"ü": [1, None]}},
        "permission_mode": "request_approval",
        "server": "docs",
        "tool": "search",
        "cwd": str(cwd),
    }
    fields.update(changes)
    return PermissionRequest(**fields)


def hooks(*commands: str, matcher: str = "", timeout: float = 5.0) -> list[HookMatcher]:
    return [
        HookMatcher(
            matcher=matcher, hooks=tuple(HookCommand(command=c, timeout=timeout) for c in commands)
        )
    ]


async def run(matchers: list[HookMatcher], request: PermissionRequest) -> HookVerdict:
    with anyio.fail_after(10):
        return await run_permission_hooks(matchers, request)


async def wait_gone(pid: int) -> None:
    """Wait, event-driven (pidfd), until ``pid`` has exited; a zombie counts as gone."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(5):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)
    try:
        assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass


@pytest.mark.anyio
async def test_allow(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "allow.sh", emit(ALLOW))
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert (verdict.behavior, verdict.message, verdict.hook_command) == ("allow", None, cmd)
    [outcome] = verdict.details
    assert (outcome.behavior, outcome.exit_code, outcome.timed_out) == ("allow", 0, False)


@pytest.mark.anyio
async def test_deny_with_message(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "deny.sh", emit(decision("deny", message="not on Fridays")))
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert (verdict.behavior, verdict.message, verdict.hook_command) == (
        "deny",
        "not on Fridays",
        cmd,
    )


@pytest.mark.anyio
async def test_exit_2_denies_with_stderr_reason(short_tmp: Path) -> None:
    body = emit(ALLOW) + "echo '  blocked by policy  ' >&2\nexit 2\n"
    cmd = write_script(short_tmp, "exit2.sh", body)
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert (verdict.behavior, verdict.message) == ("deny", "blocked by policy")
    assert verdict.details[0].exit_code == 2


@pytest.mark.anyio
async def test_exit_2_reason_is_capped(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "long.sh", "head -c 200000 /dev/zero | tr '\\0' r >&2\nexit 2\n")
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert verdict.behavior == "deny"
    assert verdict.message == "r" * MAX_MESSAGE_CHARS


@pytest.mark.anyio
async def test_crash_by_signal_is_no_decision(short_tmp: Path) -> None:
    # Inline, the shell itself dies of the signal.
    inline = f"printf '%s' {sh_quote(ALLOW)}; kill -SEGV $$"
    verdict = await run(hooks(inline), make_request(short_tmp))
    assert verdict.behavior is None
    [outcome] = verdict.details
    assert (outcome.behavior, outcome.exit_code, outcome.signal) == (None, None, 11)


@pytest.mark.anyio
async def test_crashing_script_is_no_decision(short_tmp: Path) -> None:
    # As a script, the outer `sh -c` reports the crash as exit status 128 + 11.
    cmd = write_script(short_tmp, "segv.sh", f"printf '%s' {sh_quote(ALLOW)}\nkill -SEGV $$\n")
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert verdict.behavior is None
    assert verdict.details[0].exit_code == 139


@pytest.mark.anyio
async def test_exit_1_is_no_decision_even_with_allow_output(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "exit1.sh", emit(ALLOW) + "exit 1\n")
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert verdict.behavior is None
    assert verdict.details[0].exit_code == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        pytest.param(emit("yes please"), id="garbage"),
        pytest.param("cat >/dev/null\n", id="empty"),
        pytest.param(emit("{}"), id="json-without-decision"),
        pytest.param(emit(decision("deny") + "\n" + ALLOW), id="deny-then-allow-lines"),
        pytest.param(emit(ALLOW + "\n" + decision("deny")), id="allow-then-deny-lines"),
        pytest.param(emit(ALLOW + ALLOW), id="two-documents-one-line"),
    ],
)
async def test_no_decision_outputs(short_tmp: Path, body: str) -> None:
    cmd = write_script(short_tmp, "hook.sh", body)
    verdict = await run(hooks(cmd), make_request(short_tmp))
    assert verdict.behavior is None
    assert verdict.message is None
    assert verdict.hook_command is None
    assert [o.behavior for o in verdict.details] == [None]


@pytest.mark.anyio
async def test_command_not_found_is_no_decision(short_tmp: Path) -> None:
    verdict = await run(hooks(str(short_tmp / "missing.sh")), make_request(short_tmp))
    assert verdict.behavior is None
    assert verdict.details[0].exit_code == 127


@pytest.mark.anyio
async def test_timeout_kills_the_whole_process_group(short_tmp: Path) -> None:
    body = (
        f"echo $$ > {short_tmp}/shell.pid\n"
        "sleep 30 &\n"
        f"echo $! > {short_tmp}/child.pid\n"
        f"printf '%s\\n' {sh_quote(ALLOW)}\n"  # an answer before the timeout does not count
        "sleep 30\n"
    )
    cmd = write_script(short_tmp, "slow.sh", body)
    started = anyio.current_time()
    verdict = await run(hooks(cmd, timeout=0.5), make_request(short_tmp))
    assert anyio.current_time() - started < 5
    assert verdict.behavior is None
    [outcome] = verdict.details
    assert outcome.timed_out
    assert outcome.behavior is None
    for name in ("shell.pid", "child.pid"):
        await wait_gone(int((short_tmp / name).read_text()))


async def read_line_from_fifo(path: Path) -> str:
    """Wait, event-driven, for a writer to put one line into the FIFO at ``path``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    try:
        with anyio.fail_after(5):
            while not data.endswith(b"\n"):
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 4096)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                data += chunk
    finally:
        os.close(fd)
    return data.decode()


@pytest.mark.anyio
async def test_cancelled_caller_kills_the_hook(short_tmp: Path) -> None:
    ready = short_tmp / "ready"
    os.mkfifo(ready)
    body = f"sleep 30 &\necho $$ $! > {ready}\nwait\n"
    cmd = write_script(short_tmp, "slow.sh", body)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_permission_hooks, hooks(cmd, timeout=60), make_request(short_tmp))
            pids = [int(p) for p in (await read_line_from_fifo(ready)).split()]
            tg.cancel_scope.cancel()
    assert len(pids) == 2
    for pid in pids:
        await wait_gone(pid)


@pytest.mark.anyio
async def test_flooding_stdout_does_not_block_and_is_no_decision(short_tmp: Path) -> None:
    body = f"printf '%s' {sh_quote(ALLOW)}\nhead -c 2000000 /dev/zero | tr '\\0' ' '\nexit 0\n"
    cmd = write_script(short_tmp, "flood.sh", body)
    verdict = await run(hooks(cmd, timeout=5), make_request(short_tmp))
    assert verdict.behavior is None
    assert not verdict.details[0].timed_out
    assert str(MAX_OUTPUT_BYTES) in verdict.details[0].note


@pytest.mark.anyio
async def test_hook_that_ignores_a_large_stdin_still_decides(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "quick.sh", f"printf '%s\\n' {sh_quote(ALLOW)}\n")
    big = {"blob": "z" * 2_000_000}
    verdict = await run(hooks(cmd), make_request(short_tmp, tool_input=big))
    assert verdict.behavior == "allow"


@pytest.mark.anyio
async def test_stdin_has_the_documented_shape(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "copy.sh", f"cat > {short_tmp}/stdin.json\n")
    request = make_request(short_tmp)
    verdict = await run(hooks(cmd), request)
    assert verdict.behavior is None
    assert json.loads((short_tmp / "stdin.json").read_text()) == {
        "hook_event_name": "PermissionRequest",
        "session_id": "conv-1",
        "tool_name": NAME,
        "tool_input": {"q": "x", "n": 3, "nested": {"ü": [1, None]}},
        "permission_mode": "default",  # Claude Code's name for request_approval
        "approval_level": "request_approval",
        "cwd": str(short_tmp),
        "mcp_server": "docs",
        "mcp_tool": "search",
    }


@pytest.mark.anyio
async def test_hook_runs_in_the_request_cwd(short_tmp: Path) -> None:
    work = short_tmp / "work"
    work.mkdir()
    cmd = write_script(short_tmp, "pwd.sh", f"pwd > {short_tmp}/pwd.txt\n")
    await run(hooks(cmd), make_request(work))
    assert (short_tmp / "pwd.txt").read_text().strip() == str(work)
    # A cwd that does not exist (or cannot) falls back to the daemon's own directory.
    for bad in [str(short_tmp / "gone"), "", "bad\0path"]:
        (short_tmp / "pwd.txt").unlink()
        await run(hooks(cmd), msgspec.structs.replace(make_request(short_tmp), cwd=bad))
        assert (short_tmp / "pwd.txt").read_text().strip() == os.getcwd()


@pytest.mark.anyio
async def test_leading_tilde_is_expanded(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = short_tmp / "my home"
    (home / "bin").mkdir(parents=True)
    write_script(home / "bin", "approve.sh", emit(ALLOW))
    monkeypatch.setenv("HOME", str(home))
    verdict = await run(hooks("~/bin/approve.sh"), make_request(short_tmp))
    assert verdict.behavior == "allow"
    assert verdict.hook_command == "~/bin/approve.sh"


@pytest.mark.anyio
async def test_matcher_filters_hooks(short_tmp: Path) -> None:
    log = short_tmp / "ran.log"

    def logging_hook(label: str) -> str:
        return write_script(short_tmp, f"{label}.sh", f"cat >/dev/null\necho {label} >> {log}\n")

    matchers = [
        HookMatcher(matcher="mcp__docs_.*", hooks=(HookCommand(command=logging_hook("docs")),)),
        HookMatcher(matcher="mcp__files_.*", hooks=(HookCommand(command=logging_hook("files")),)),
        HookMatcher(matcher=NAME, hooks=(HookCommand(command=logging_hook("exact")),)),
        HookMatcher(matcher="search", hooks=(HookCommand(command=logging_hook("bare")),)),
        HookMatcher(matcher="*", hooks=(HookCommand(command=logging_hook("star")),)),
    ]
    verdict = await run(matchers, make_request(short_tmp))
    assert sorted(log.read_text().split()) == ["docs", "exact", "star"]
    assert len(verdict.details) == 3


@pytest.mark.anyio
async def test_no_matching_hook_runs_nothing(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "touch.sh", f"touch {short_tmp}/ran\n")
    verdict = await run(hooks(cmd, matcher="Bash"), make_request(short_tmp))
    assert verdict == HookVerdict()
    assert not (short_tmp / "ran").exists()


@pytest.mark.anyio
async def test_invalid_regex_matches_nothing_and_is_reported(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "allow.sh", emit(ALLOW))
    matchers = [
        HookMatcher(matcher="mcp__(", hooks=(HookCommand(command=cmd),)),
        HookMatcher(matcher="Bash", hooks=(HookCommand(command=cmd),)),
    ]
    verdict = await run(matchers, make_request(short_tmp))
    assert verdict.behavior is None
    assert verdict.details == []
    assert len(verdict.errors) == 1
    assert verdict.errors[0].startswith(
        "hooks.PermissionRequest[0].matcher: invalid regular expression"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("deny_first", [True, False])
async def test_deny_beats_allow(short_tmp: Path, deny_first: bool) -> None:
    allow = write_script(short_tmp, "allow.sh", emit(ALLOW))
    deny = write_script(short_tmp, "deny.sh", emit(decision("deny", message="no")))
    order = [deny, allow] if deny_first else [allow, deny]
    matchers = [HookMatcher(matcher=".*", hooks=(HookCommand(command=c),)) for c in order]
    verdict = await run(matchers, make_request(short_tmp))
    assert (verdict.behavior, verdict.message, verdict.hook_command) == ("deny", "no", deny)
    assert sorted(str(o.behavior) for o in verdict.details) == ["allow", "deny"]


@pytest.mark.anyio
async def test_allow_wins_over_no_decision(short_tmp: Path) -> None:
    allow = write_script(short_tmp, "allow.sh", emit(ALLOW))
    broken = write_script(short_tmp, "broken.sh", "exit 1\n")
    verdict = await run(hooks(broken, allow), make_request(short_tmp))
    assert (verdict.behavior, verdict.hook_command) == ("allow", allow)


@pytest.mark.anyio
async def test_same_command_runs_once(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "count.sh", f"cat >/dev/null\necho x >> {short_tmp}/count\n")
    matchers = hooks(cmd) + hooks(cmd, matcher="mcp__.*")
    verdict = await run(matchers, make_request(short_tmp))
    assert (short_tmp / "count").read_text() == "x\n"
    assert len(verdict.details) == 1


@pytest.mark.anyio
async def test_hooks_run_concurrently_without_blocking_the_loop(short_tmp: Path) -> None:
    # The first hook only answers once the second hook has run and the test task has created a
    # file: sequential hooks or a blocked event loop would leave it waiting until its timeout.
    waiter = write_script(
        short_tmp,
        "waiter.sh",
        f"while [ ! -e {short_tmp}/b ] || [ ! -e {short_tmp}/go ]; do sleep 0.01; done\n"
        + emit(ALLOW),
    )
    toucher = write_script(short_tmp, "toucher.sh", f"touch {short_tmp}/b\n")
    verdict: HookVerdict | None = None

    async def call() -> None:
        nonlocal verdict
        verdict = await run(hooks(waiter, toucher, timeout=8), make_request(short_tmp))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.Path(short_tmp / "go").touch()
    assert verdict is not None
    assert verdict.behavior == "allow"
    assert verdict.hook_command == waiter


@pytest.mark.anyio
async def test_unencodable_input_is_no_decision(short_tmp: Path) -> None:
    cmd = write_script(short_tmp, "allow.sh", emit(ALLOW))
    verdict = await run(hooks(cmd), make_request(short_tmp, tool_input={"x": object()}))
    assert verdict.behavior is None
    assert verdict.details == []
    assert verdict.errors
