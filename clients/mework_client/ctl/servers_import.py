"""``meworkctl servers import``: preview, ask for VS Code's ``${input:ID}`` values, import.

The daemon says which inputs a document needs (a ``dryRun`` import); on a terminal each is asked
for (hidden when the document marks it a password), stored as the value or as a ``${VAR}``
reference to meworkd's environment as the person chooses. Without a terminal the values come
from ``--input ID=VALUE``, and a missing one is an error that lists them all.
"""

from __future__ import annotations

import getpass
import re
import sys
from collections.abc import Callable
from typing import Any

from mework_client.ctl.command import (
    EXIT_ERROR,
    EXIT_OK,
    Command,
    CtlError,
    Ctx,
    read_text,
)
from mework_client.ctl.layout import GREEN, PLAIN, RED, Cell, Style, format_table, obj, plural
from mework_client.ctl.words import in_own_words

__all__ = ["ask_input", "format_import", "import_failed", "missing_inputs_message", "run_import"]

Ask = Callable[[str], "str | None"]
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_import(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    rows: list[list[object]] = []
    for outcome, colour in [
        ("added", GREEN),
        ("replaced", GREEN),
        ("skipped", ""),
        ("rejected", RED),
    ]:
        for entry in r.get(outcome) or []:
            name, reason = (
                (entry.get("name"), entry.get("reason"))
                if isinstance(entry, dict)
                else (entry, None)
            )
            words = None if reason is None else in_own_words(str(reason))
            rows.append([Cell(outcome, colour), name, words])
    counts = ", ".join(
        f"{len(r.get(k) or [])} {k}" for k in ("added", "replaced", "skipped", "rejected")
    )
    nothing = "Nothing would be imported." if r.get("dryRun") else "Nothing imported."
    lines = [format_table(["RESULT", "NAME", "REASON"], rows, style)] if rows else []
    if not rows and not r.get("rules"):
        lines.append(nothing)
    if r.get("duplicates"):
        dupes = ", ".join(map(str, r["duplicates"]))
        lines.append(style.red(f"duplicate names in the document (not imported): {dupes}"))
    for rule in r.get("rules") or []:
        lines.append(style.green(_rule_line(obj(rule), bool(r.get("dryRun")))))
    for w in r.get("warnings") or []:
        where = f"{w['name']}.{w.get('field')}" if w.get("name") else str(w.get("field"))
        lines.append(f"warning: {where}: {w.get('message')}")
    for need in r.get("needsInputs") or []:
        servers = ", ".join(map(str, need.get("servers") or []))
        lines.append(style.red(f"needs input {need.get('id')} (not imported): {servers}"))
    if r.get("rules"):
        counts += ", " + plural(len(r["rules"]), "tool rule")
    suffix = f" (format: {r['format']})" if r.get("format") else ""
    lines.append(("dry run: " if r.get("dryRun") else "") + counts + suffix)
    return "\n".join(lines)


_RULE_WORDS = {
    "alwaysAllowTools": "runs without asking",
    "disabledTools": "is never offered nor callable",
    "disabledAutoApproveTools": "asks every time",
}


def _rule_line(rule: dict[str, Any], dry_run: bool) -> str:
    """A Claude Code permission rule carried over, as what it will do here."""
    field, pattern = rule.get("field"), rule.get("pattern")
    what = "every tool" if pattern == "*" else f"{pattern!r}"
    verb = "would join" if dry_run else "joined"
    return (
        f"rule: {rule.get('server')}: {what} {_RULE_WORDS.get(str(field), '')} ({pattern} "
        f"{verb} {field}; from permissions.{rule.get('list')} {rule.get('rule')})"
    )


def import_failed(result: Any) -> str | None:
    r = obj(result)
    rejected, needed = r.get("rejected") or [], r.get("needsInputs") or []
    if rejected:
        verb = "was" if len(rejected) == 1 else "were"
        return f"{plural(len(rejected), 'entry', 'entries')} {verb} rejected"
    return missing_inputs_message(needed) if needed else None


def missing_inputs_message(needed: list[dict[str, Any]]) -> str:
    described = []
    for need in needed:
        about = [str(need["description"])] if need.get("description") else []
        about.append("for " + ", ".join(map(str, need.get("servers") or [])))
        described.append(f"{need.get('id')} ({'; '.join(about)})")
    return (
        "the document needs values for its ${input:...} references: "
        + ", ".join(described)
        + ". Give each with --input ID=VALUE (a ${VAR} value stores a reference to meworkd's "
        "environment instead of the secret), or run on a terminal to be asked."
    )


def _ask_line(prompt: str) -> str | None:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def _ask_hidden(prompt: str) -> str | None:
    try:
        return getpass.getpass(prompt, stream=sys.stderr)
    except EOFError:
        return None


def ask_input(
    need: dict[str, Any],
    note: Callable[[str], None],
    ask: Ask = _ask_line,
    hidden: Ask = _ask_hidden,
) -> str:
    """The value to store for one needed input: the secret itself, or ``${VAR}``."""
    servers = ", ".join(map(str, need.get("servers") or []))
    description = f": {need['description']}" if need.get("description") else ""
    note(f"input {need.get('id')}{description} (used by {servers})")
    while True:
        choice = (
            _answer(ask, "  store the [v]alue, or a ${VAR} [r]eference to meworkd's environment? ")
            .strip()
            .lower()
        )
        if choice in ("v", "value"):
            read = hidden if need.get("password") else ask
            value = _answer(read, "  value (hidden): " if need.get("password") else "  value: ")
            if value:
                return value
            note("  an empty value is not stored; try again")
        elif choice in ("r", "reference"):
            name = _answer(ask, "  variable name (set in meworkd's environment): ").strip()
            if _VARIABLE.match(name.removeprefix("${").removesuffix("}")):
                return "${" + name.removeprefix("${").removesuffix("}") + "}"
            note(f"  {name!r} is not a variable name (letters, digits, _)")
        else:
            note("  answer v or r")


def _answer(ask: Ask, prompt: str) -> str:
    answer = ask(prompt)
    if answer is None:
        raise CtlError("cancelled: no answer on the terminal")
    return answer


def run_import(cmd: Command, ctx: Ctx) -> int:
    args = ctx.args
    inputs = dict(args.input or [])
    params = {"text": read_text(args.file), "onConflict": args.on_conflict, "inputs": inputs}
    preview = ctx.call("servers.import", {**params, "dryRun": True})
    needed = obj(preview).get("needsInputs") or []
    if needed and not args.dry_run:
        if args.file == "-" or not sys.stdin.isatty():
            raise CtlError(missing_inputs_message(needed))
        for need in needed:
            inputs[str(need["id"])] = ask_input(need, ctx.note)
    result = preview if args.dry_run else ctx.call("servers.import", params)
    ctx.emit(result, lambda: format_import(result, ctx.style))
    problem = import_failed(result)
    if problem:
        ctx.fail(problem)
        return EXIT_ERROR
    return EXIT_OK
