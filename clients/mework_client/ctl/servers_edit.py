"""``meworkctl servers edit NAME``: the entry as JSON in the user's editor, saved when valid.

The entry is shown as ``servers.get`` returns it (secrets masked; a mask left as it is keeps
the stored secret) and the saved text goes to ``servers.replace``, which reads it as meworkd
reads its settings file (JSONC: comments and trailing commas allowed) and replaces the entry:
keys the user removed are removed. The client parses nothing itself, so every frontend accepts
the same text. An entry that does not parse or that meworkd refuses is re-opened with the error
as ``//`` comments at the top (``git commit`` and ``kubectl edit`` do the same), the user's
text kept below; they are stripped again before the next try. Saving it unchanged or emptying
the file leaves the entry as it was. What would make the edit fail anyway (no editor can run
here, a settings file meworkd cannot read) is said before any editor starts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mework_client import RpcError
from mework_client.ctl.command import EXIT_OK, Command, CtlError, Ctx, describe_rpc_error
from mework_client.ctl.layout import obj
from mework_client.ctl.servers import NAME

__all__ = ["COMMANDS", "editor_command", "shift_lines", "strip_error_comment"]

ERROR_MARK = "// meworkctl: "
FALLBACK_EDITORS = ("editor", "nano", "vi")  # Debian's alternative first, then the usual two
REFUSED_KINDS = frozenset({"invalid_settings", "invalid_params", "conflict"})


NO_TERMINAL = (
    "no editor can run here: neither $VISUAL nor $EDITOR is set, and without a terminal "
    "{editor} cannot run; run it in a terminal, or set VISUAL to an editor that opens its "
    "own window (for example: VISUAL='code --wait')"
)


def editor_command() -> list[str]:
    """``$VISUAL``, else ``$EDITOR`` (both may carry options: ``code --wait``), else a default.

    The defaults are terminal editors: without a terminal they are refused here, not started.
    """
    import shlex
    import shutil

    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            return shlex.split(value)
    for name in FALLBACK_EDITORS:
        if shutil.which(name):
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise CtlError(NO_TERMINAL.format(editor=name))
            return [name]
    raise CtlError("no editor found: set EDITOR (for example: export EDITOR=nano)")


def strip_error_comment(text: str) -> str:
    """The text without the error lines this command put at its top."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith(ERROR_MARK):
        lines.pop(0)
    return "".join(lines)


def _notes(problem: str) -> list[str]:
    notes = [f"{ERROR_MARK}{line}" for line in problem.splitlines() if line.strip()]
    return [*notes, f"{ERROR_MARK}fix it and save, or empty the file to leave the entry as it was"]


def _with_error(text: str, problem: str) -> str:
    return "\n".join(_notes(problem)) + "\n" + text


def _edit(command: list[str], path: Path) -> str:
    import subprocess

    try:
        status = subprocess.run([*command, str(path)], check=False).returncode
    except OSError as exc:
        raise CtlError(f"cannot run the editor {command[0]!r}: {exc.strerror or exc}") from None
    if status != 0:
        raise CtlError(f"the editor {command[0]!r} exited with status {status}; nothing changed")
    return path.read_text(encoding="utf-8")


def shift_lines(problem: str, line: object, by: int) -> str:
    """``problem`` with meworkd's "line N" moved down ``by`` lines: the error comments put
    above the user's text when the editor opens again."""
    if not isinstance(line, int) or by == 0:
        return problem
    return problem.replace(f"line {line},", f"line {line + by},", 1)


def _save(ctx: Ctx, name: str, text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Sends the edited entry: the entry as stored, or the problem to show when it was not."""
    try:
        result = obj(ctx.call("servers.replace", {"name": name, "text": text}))
    except RpcError as exc:
        if exc.kind not in REFUSED_KINDS:
            raise
        problem = describe_rpc_error(exc, "servers.replace")
        notes = len(_notes(problem))
        return None, shift_lines(problem, obj(exc.data).get("line"), notes)
    return obj(result.get("server")), None


def _refuse_unreadable(name: str, shown: dict[str, Any]) -> None:
    """meworkd refuses every write while its settings file is not in force: say so first."""
    health = obj(shown.get("settings"))
    if health.get("state") == "unreadable":
        raise CtlError(
            f"cannot edit {name}: the settings file {health.get('path')} cannot be read "
            f"({health.get('error')}); fix the file first, meworkd will not overwrite it"
        )


def _run_edit(_cmd: Command, ctx: Ctx) -> int:
    import tempfile  # here, not at the top: start-up time of every other command

    name: str = ctx.args.name
    shown = obj(ctx.call("servers.get", {"name": name}))
    _refuse_unreadable(name, shown)
    command = editor_command()
    old = obj(shown.get("server"))
    original = json.dumps(old, indent=2, ensure_ascii=False) + "\n"
    with tempfile.TemporaryDirectory(prefix="meworkctl-") as folder:
        path = Path(folder) / f"{name}.json"  # the suffix gives the editor its JSON mode
        path.write_text(original, encoding="utf-8")
        while True:
            text = strip_error_comment(_edit(command, path))
            if not text.strip():
                ctx.note(f"the file was emptied: {name} is left as it was")
                return EXIT_OK
            if text == original:
                ctx.note(f"no changes: {name} is left as it was")
                return EXIT_OK
            stored, problem = _save(ctx, name, text)
            if problem is None:
                if stored == old:  # only layout or comments changed
                    ctx.note(f"no changes: {name} is left as it was")
                else:
                    ctx.print(ctx.style.green("ok") + f"  saved {name}")
                return EXIT_OK
            ctx.note(f"{name} was not saved, re-opening the editor: {problem.splitlines()[0]}")
            path.write_text(_with_error(text, problem), encoding="utf-8")


COMMANDS: tuple[Command, ...] = (
    Command(
        "servers edit",
        "edit a server's entry as JSON in $VISUAL or $EDITOR",
        "EDITOR=nano meworkctl servers edit filesystem",
        args=(NAME,),
        run=_run_edit,
        details="Secrets show as ******** and stay stored when left so. Comments and trailing "
        "commas are fine (JSONC, as in the settings file; comments are not stored). The entry is "
        "saved when it is valid (removed keys are removed); otherwise the editor opens again "
        "with the error at the top and your text below it. Saving it unchanged or emptying the "
        "file changes nothing.",
    ),
)
