"""meworkctl's ``tasks`` group: the MCP tasks of tool calls, listed, shown and cancelled.

A task is known by the id of the call its server answered with it (the server's own task id
never leaves meworkd), so ``tasks show`` and ``tasks cancel`` take a call id.
"""

from __future__ import annotations

from typing import Any

from mework_protocol.wording import OPEN_TASK_STATES, age, task_state

from mework_client.ctl.command import Args, Command, arg, pick, show
from mework_client.ctl.layout import PLAIN, Style, format_table, items, key_values, obj, when

__all__ = ["COMMANDS", "format_task", "format_tasks"]

CALL = arg("call", metavar="CALL_ID", help="the call id of the task (from meworkctl tasks)")


def _status(task: dict[str, Any], style: Style) -> str:
    said = task_state(task)
    if task.get("status") == "input_required":
        return style.bold(said)
    return style.red(said) if task.get("status") == "failed" else said


def format_tasks(result: Any, style: Style = PLAIN) -> str:
    """``tasks.list``: newest first, one row each; the message last (it is cut to fit)."""
    tasks = items(result, "tasks")
    if not tasks:
        return "No MCP tasks."
    rows = [
        [
            _status(t, style),
            f"{t.get('server')}/{t.get('tool')}",
            t.get("conversationId"),
            age(t.get("createdAt")),
            t.get("callId"),
            t.get("message") or "",
        ]
        for t in tasks
    ]
    table = format_table(["STATUS", "SERVER/TOOL", "CONV", "AGE", "CALL", "MESSAGE"], rows, style)
    if any(t.get("status") == "input_required" for t in tasks):
        table += "\n" + style.dim("a task that needs your answer: meworkctl requests watch")
    return table


def _followed(task: dict[str, Any]) -> str:
    if task.get("followed"):
        return "followed now (meworkd polls it)"
    if task.get("status") in OPEN_TASK_STATES:
        return "not followed now (it is followed again when meworkd next starts)"
    return "no longer followed (it ended)"


def format_task(result: Any, style: Style = PLAIN) -> str:
    """``tasks.get``: every field, in words."""
    t = obj(result)
    resumable = t.get("resumable")
    return key_values(
        [
            ("call", t.get("callId")),
            ("status", task_state(t)),
            ("message", t.get("message") or "-"),
            ("server", t.get("server")),
            ("tool", t.get("tool")),
            ("name", t.get("name")),
            ("conversation", t.get("conversationId")),
            ("turn", t.get("turnId")),
            ("created", f"{when(t.get('createdAt'))} ({age(t.get('createdAt'))} ago)"),
            ("updated", f"{when(t.get('updatedAt'))} ({age(t.get('updatedAt'))} ago)"),
            (
                "restart",
                "outlives a restart of meworkd (its server runs it)"
                if resumable
                else "ends with meworkd (a stdio server's task)",
            ),
            ("followed", _followed(t)),
        ],
        style,
    )


def _cancelled(result: Any, args: Args, style: Style) -> str:
    if obj(result).get("cancelled"):
        return style.green("ok") + f"  cancelled {args.call}"
    return f"{args.call} had ended already: nothing to cancel"


def _list_params(args: Args) -> dict[str, Any]:
    only = {"conversationId": args.conversation} if args.conversation is not None else {}
    return only | ({"openOnly": True} if args.open else {})


COMMANDS: tuple[Command, ...] = (
    Command(
        "tasks",
        "list the MCP tasks of tool calls (newest first)",
        "meworkctl tasks --open",
        method="tasks.list",
        args=(
            arg(
                "--conversation",
                metavar="ID",
                help="only this conversation's tasks",
                complete="conversations",
            ),
            arg("--open", action="store_true", help="only the tasks not ended yet"),
        ),
        params=_list_params,
        render=show(format_tasks),
        usage="%(prog)s [--conversation ID] [--open] [--json]\n"
        "       %(prog)s show CALL_ID\n"
        "       %(prog)s cancel CALL_ID",
        details="A server may answer a tool call with a task; the call waits for it. Each task "
        "is known by the call's id: 'meworkctl tasks show CALL_ID' shows it in full, "
        "'meworkctl tasks cancel CALL_ID' cancels it. The newest 1,000 ended tasks are kept.",
    ),
    Command(
        "tasks show",
        "show one MCP task in full",
        "meworkctl tasks show ctl-1a2b3c4d5e6f",
        method="tasks.get",
        args=(CALL,),
        params=pick(callId="call"),
        render=show(format_task),
    ),
    Command(
        "tasks cancel",
        "cancel an MCP task on its server (its call ends, saying so)",
        "meworkctl tasks cancel ctl-1a2b3c4d5e6f",
        method="tasks.cancel",
        args=(CALL,),
        params=pick(callId="call"),
        render=_cancelled,
    ),
)
