"""``meworkctl servers edit NAME``: the entry as JSON in the user's editor, saved when valid.

The entry is shown as ``servers.get`` returns it (secrets masked; a mask left as it is keeps
the stored secret) and saved with ``servers.update`` as a replacement: keys the user removed are
removed. An entry that does not parse or that meworkd refuses is re-opened with the error as
``//`` comments at the top, which are stripped again before the next try. Saving it unchanged
or emptying the file leaves the entry as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mework_client import RpcError
from mework_client.ctl.command import EXIT_OK, Command, CtlError, Ctx, describe_rpc_error
from mework_client.ctl.layout import obj
from mework_client.ctl.servers import NAME

__all__ = ["COMMANDS", "editor_command", "replacement_patch", "strip_error_comment"]

ERROR_MARK = "// meworkctl: "
FALLBACK_EDITORS = ("editor", "nano", "vi")  # Debian's alternative first, then the usual two
REFUSED_KINDS = frozenset({"invalid_settings", "invalid_params", "conflict"})


def editor_command() -> list[str]:
    """``$VISUAL``, else ``$EDITOR`` (both may carry options: ``code --wait``), else a default."""
    import shlex
    import shutil

    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            return shlex.split(value)
    for name in FALLBACK_EDITORS:
        if shutil.which(name):
            return [name]
    raise CtlError("no editor found: set EDITOR (for example: export EDITOR=nano)")


def strip_error_comment(text: str) -> str:
    """The text without the error lines this command put at its top."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith(ERROR_MARK):
        lines.pop(0)
    return "".join(lines)


def replacement_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A ``servers.update`` patch that turns ``old`` into ``new`` (``null`` removes a key)."""
    return {**{key: None for key in old if key not in new}, **new}


def _with_error(text: str, problem: str) -> str:
    notes = [f"{ERROR_MARK}{line}" for line in problem.splitlines() if line.strip()]
    notes.append(f"{ERROR_MARK}fix it and save, or empty the file to leave the entry as it was")
    return "\n".join(notes) + "\n" + text


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("the entry must be a JSON object")
    return value


def _edit(path: Path) -> str:
    import subprocess

    command = editor_command()
    try:
        status = subprocess.run([*command, str(path)], check=False).returncode
    except OSError as exc:
        raise CtlError(f"cannot run the editor {command[0]!r}: {exc.strerror or exc}") from None
    if status != 0:
        raise CtlError(f"the editor {command[0]!r} exited with status {status}; nothing changed")
    return path.read_text(encoding="utf-8")


def _save(ctx: Ctx, name: str, old: dict[str, Any], text: str) -> str | None:
    """Saves the edited entry; the problem to show when it cannot (``None``: saved)."""
    try:
        new = _parse(text)
    except ValueError as exc:
        return str(exc)
    try:
        ctx.call("servers.update", {"name": name, "patch": replacement_patch(old, new)})
    except RpcError as exc:
        if exc.kind not in REFUSED_KINDS:
            raise
        return describe_rpc_error(exc, "servers.update")
    return None


def _run_edit(_cmd: Command, ctx: Ctx) -> int:
    import tempfile  # here, not at the top: start-up time of every other command

    name: str = ctx.args.name
    old = obj(obj(ctx.call("servers.get", {"name": name})).get("server"))
    original = json.dumps(old, indent=2, ensure_ascii=False) + "\n"
    with tempfile.TemporaryDirectory(prefix="meworkctl-") as folder:
        path = Path(folder) / f"{name}.json"  # the suffix gives the editor its JSON mode
        path.write_text(original, encoding="utf-8")
        while True:
            text = strip_error_comment(_edit(path))
            if not text.strip():
                ctx.note(f"the file was emptied: {name} is left as it was")
                return EXIT_OK
            if text == original or _same(text, old):
                ctx.note(f"no changes: {name} is left as it was")
                return EXIT_OK
            problem = _save(ctx, name, old, text)
            if problem is None:
                ctx.print(ctx.style.green("ok") + f"  saved {name}")
                return EXIT_OK
            ctx.note(f"{name} was not saved: {problem.splitlines()[0]} (re-opening the editor)")
            path.write_text(_with_error(text, problem), encoding="utf-8")


def _same(text: str, old: dict[str, Any]) -> bool:
    try:
        return _parse(text) == old
    except ValueError:
        return False


COMMANDS: tuple[Command, ...] = (
    Command(
        "servers edit",
        "edit a server's entry as JSON in $VISUAL or $EDITOR",
        "EDITOR=nano meworkctl servers edit filesystem",
        args=(NAME,),
        run=_run_edit,
        details="Secrets show as ******** and stay stored when left so. The entry is saved when "
        "it is valid (removed keys are removed); otherwise the editor opens again with the error "
        "at the top. Saving it unchanged or emptying the file changes nothing.",
    ),
)
