"""meworkctl's ``turn`` group and ``call``: what a frontend does for each model turn."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from mework_protocol.failures import failure_error
from mework_protocol.wording import byte_size, token_estimate

from mework_client.ctl.command import (
    Args,
    Command,
    Ctx,
    UsageError,
    arg,
    pick,
    read_text,
    say,
    show,
)
from mework_client.ctl.layout import (
    PLAIN,
    Style,
    describe,
    dumps,
    format_table,
    items,
    key_values,
    listing,
    obj,
    plural,
    when,
)
from mework_client.ctl.words import in_own_words

__all__ = [
    "COMMANDS",
    "format_background",
    "format_call",
    "format_costs",
    "format_search",
    "format_turn",
    "format_turns",
]

TURN = arg("turn", metavar="TURN", help="the turn id (from turn begin)", complete="turns")
MOVED_CALL = arg("call", metavar="CALL", help="the call id (said when it moved)")


def format_turns(result: Any, style: Style = PLAIN) -> str:
    """``turns.list``: the open turns, oldest first."""
    turns = items(result, "turns")
    if not turns:
        return "No open turns."
    rows = [
        [t.get("turnId"), t.get("conversationId"), when(t.get("began")),
         len(t.get("tools") or []), t.get("callsInFlight")]
        for t in turns
    ]  # fmt: skip
    return format_table(["TURN", "CONV", "BEGAN", "TOOLS", "CALLS"], rows, style)


def format_turn(result: Any, style: Style = PLAIN) -> str:
    """``turns.begin``: the turn id, the tools as bound for the model, and failed servers."""
    r = obj(result)
    bindings = obj(r.get("bindings"))
    rows: list[list[object]] = []
    for tool in items(r, "tools"):
        name = tool.get("name")
        # search_tools is meworkd's own: no server binds it.
        own = {"server": "meworkd", "tool": "search_tools"} if name == r.get("searchTool") else {}
        binding = obj(bindings.get(str(name))) or own
        rows.append([name, binding.get("server"), binding.get("tool"), describe(tool)])
    lines = [
        key_values([("turn", r.get("turnId"))], style),
        listing("Tools", ["NAME", "SERVER", "TOOL", "DESCRIPTION"], rows, style),
    ]
    if deferred := r.get("deferred"):
        lines.append(
            style.dim(
                f"{plural(deferred, 'more tool')} deferred behind search_tools: "
                f"meworkctl turn search {r.get('turnId')} 'what the tool should do'"
            )
        )
    if costs := items(r, "costs"):
        lines.append(format_costs(costs, style))
    for failure in items(r, "failures"):
        # The failure's kind (command_not_found, ...) is for programs: --json has it.
        said = in_own_words(failure_error(failure) or "failed")
        lines.append(style.red(f"{failure.get('server')}: {said}"))
    return "\n".join(lines)


def format_costs(costs: list[dict[str, Any]], style: Style = PLAIN) -> str:
    """What each server's tools cost the turn (``turns.begin`` ``costs``), costliest first.

    ``offered`` and ``deferred`` are read when the daemon sends them (a daemon that defers
    nothing may send ``tools`` alone).
    """
    deferred = any("deferred" in c for c in costs)
    headers = ["SERVER", "OFFERED", *(["DEFERRED"] * deferred), "DEFINITIONS", "EST. TOKENS"]
    rows: list[list[object]] = []
    for cost in costs:
        offered = cost.get("offered", cost.get("tools"))
        rows.append(
            [
                cost.get("server"),
                offered,
                *([cost.get("deferred", 0)] * deferred),
                byte_size(cost.get("bytes")),
                token_estimate(cost.get("tokensEstimate"), unit=False),
            ]
        )
    note = style.dim("(tokens: bytes / 4, an estimate; the model's tokenizer differs)")
    return listing("Cost per server", headers, rows, style) + "\n" + note


def format_search(result: Any, style: Style = PLAIN) -> str:
    """``turns.searchTools``: the best matching tools, best first, with their bindings."""
    r = obj(result)
    rows = [[t.get("name"), t.get("server"), t.get("tool"), describe(t)] for t in items(r, "tools")]
    if not rows:
        return f"No tool matches {r.get('query')!r}."
    return listing("Tools", ["NAME", "SERVER", "TOOL", "DESCRIPTION"], rows, style)


def _decoded_size(data: object) -> int:
    """Bytes a base64 string decodes to (without decoding it)."""
    if not isinstance(data, str):
        return 0
    text = data.strip()
    return len(text) * 3 // 4 - text[-2:].count("=")


def _content_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType') or '?'}, {_decoded_size(block.get('data'))} bytes]"
    if kind == "resource":
        resource = obj(block.get("resource"))
        text = resource.get("text")
        head = f"[resource {resource.get('uri') or '?'}"
        if isinstance(text, str):
            return f"{head}]\n{text}"
        size = _decoded_size(resource.get("blob"))
        return f"{head}, {resource.get('mimeType') or '?'}, {size} bytes]"
    if kind == "resource_link":
        return f"[link {block.get('uri') or '?'} {block.get('name') or ''}]".replace(" ]", "]")
    return f"[{kind or 'unknown'} content]"


def format_call(result: Any, style: Style = PLAIN) -> str:
    """``turns.callTool``: text as text, other blocks summarised, structuredContent as JSON.

    When both are there, each gets a label, so the JSON is not mistaken for more text.
    """
    r = obj(result)
    parts = [_content_block(block) for block in items(r, "content")]
    if r.get("structuredContent") is not None:
        structured = dumps(r["structuredContent"])
        if parts:
            parts = [style.dim("content:"), *parts, style.dim("structured content:")]
        parts.append(structured)
    text = "\n".join(parts)
    return style.red(text) if r.get("isError") and text else text


def _cancelled(result: Any, args: Args, style: Style) -> str:
    count = obj(result).get("cancelled")
    what = plural(count, "call") if isinstance(count, int) else "calls"
    return style.green("ok") + f"  cancelled {what} of {args.turn}"


def format_background(result: Any, style: Style = PLAIN) -> str:
    """``calls.result``: still running, or the reply as ``call`` prints it."""
    r = obj(result)
    if r.get("status") != "finished":
        return f"{r.get('callId')} is still running in the background"
    return format_call(r.get("result"), style)


def _background_cancelled(result: Any, args: Args, style: Style) -> str:
    if obj(result).get("cancelled"):
        return style.green("ok") + f"  cancelled {args.call}"
    return f"{args.call} had finished already: nothing to cancel"


def _call_failed(result: Any) -> str | None:
    # Denials, unknown names and timeouts are isError results too: not always the tool's error.
    return "the call ended in an error (isError)" if obj(result).get("isError") else None


def _run_call(cmd: Command, ctx: Ctx) -> int:
    from mework_client.ctl.call import run_call  # threads and select: only for this command

    return run_call(cmd, ctx)


def _call_params(args: Args) -> dict[str, Any]:
    text = read_text("-") if args.arguments == "-" else args.arguments
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGUMENTS is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(arguments, dict):
        raise UsageError('ARGUMENTS must be a JSON object, e.g. \'{"path": "/tmp"}\'')
    params = {"turnId": args.turn, "name": args.name, "arguments": arguments}
    return params | ({"callId": args.call_id} if args.call_id else {})


COMMANDS: tuple[Command, ...] = (
    Command(
        "turn begin",
        "begin a turn: discover the tools of the conversation's servers",
        "meworkctl turn begin chat-1",
        method="turns.begin",
        args=(
            arg(
                "conversation", metavar="CONV", help="the conversation id", complete="conversations"
            ),
            arg("--parent", metavar="TURN", help="a subagent's turn: inherit this turn's tools"),
        ),
        params=pick(conversationId="conversation", parentTurnId="parent"),
        render=show(format_turn),
        wait=True,
        progress="connecting the servers of {conversation}",
    ),
    Command(
        "turn list",
        "list the open turns (of one conversation) with their ids",
        "meworkctl turn list chat-1",
        method="turns.list",
        args=(
            arg(
                "conversation",
                metavar="CONV",
                nargs="?",
                help="only this conversation's turns",
                complete="conversations",
            ),
        ),
        params=pick(conversationId="conversation"),
        render=show(format_turns),
    ),
    Command(
        "turn end",
        "end a turn (its sessions stay pooled)",
        "meworkctl turn end t-123",
        method="turns.end",
        args=(TURN,),
        params=pick(turnId="turn"),
        render=say("ended {turn}"),
    ),
    Command(
        "turn cancel",
        "cancel a turn's calls in flight",
        "meworkctl turn cancel t-123",
        method="turns.cancel",
        args=(
            TURN,
            arg("--call-id", metavar="ID", help="only this call (the id given to call --call-id)"),
            # The old spelling, kept working (one name for one flag: --call-id, as in call).
            arg("--call", dest="call_id", help=argparse.SUPPRESS),
        ),
        params=pick(turnId="turn", callId="call_id"),
        render=_cancelled,
    ),
    Command(
        "turn search",
        "search a turn's tools, as the model's search_tools does",
        "meworkctl turn search t-123 'open a github issue'",
        method="turns.searchTools",
        args=(
            TURN,
            arg("query", metavar="QUERY", help="what the tool should do, in a few words"),
            arg("--limit", type=int, metavar="N", help="at most N tools (1-20, default 5)"),
        ),
        params=pick(turnId="turn", query="query", limit="limit"),
        render=show(format_search),
        details="Finds tools deferred behind tool search as well as offered ones, never a "
        "disabled tool or one of a server the conversation does not select.",
    ),
    Command(
        "turn result",
        "show the result of a call that moved to the background",
        "meworkctl turn result ctl-1a2b3c4d5e6f",
        method="calls.result",
        args=(MOVED_CALL,),
        params=pick(callId="call"),
        render=show(format_background),
    ),
    Command(
        "turn stop",
        "cancel a call running in the background",
        "meworkctl turn stop ctl-1a2b3c4d5e6f",
        method="calls.cancel",
        args=(MOVED_CALL,),
        params=pick(callId="call"),
        render=_background_cancelled,
    ),
    Command(
        "call",
        "call a tool in a turn, as the model would",
        'meworkctl call t-123 mcp__filesystem_1a2b3c__read-file__4d5e6f \'{"path": "/tmp/x"}\'',
        method="turns.callTool",
        args=(
            TURN,
            arg(
                "name",
                metavar="NAME",
                help="the bound tool name (from turn begin)",
                complete="tools",
            ),
            arg(
                "arguments",
                metavar="ARGUMENTS",
                nargs="?",
                default="{}",
                help="the arguments as a JSON object, or - to read them from stdin",
            ),
            arg("--call-id", metavar="ID", help="an id for turn cancel --call-id"),
        ),
        params=_call_params,
        render=show(format_call),
        failed=_call_failed,
        run=_run_call,
        wait=True,
        details="When the call needs approval it says so (tool and server); on a terminal it "
        "asks y/N right there (any other answer is a reason to deny), elsewhere it waits and "
        "says how to answer with 'meworkctl approvals allow ID'. Ctrl-C cancels the call and "
        "its pending approval (exit 130). Prints text content, summarises other content, labels "
        "structured content and exits 1 when the tool reports isError.",
    ),
)
