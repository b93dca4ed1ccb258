"""meworkctl's inspection of a server's prompts and resources (its detail page, on a terminal).

``servers prompts|prompt|resources|read|complete`` dial a short-lived session of their own;
nothing they show is offered to a model.
"""

from __future__ import annotations

from typing import Any

from mework_client.ctl.command import Args, Command, UsageError, arg, pair, pick, show
from mework_client.ctl.layout import PLAIN, Style, describe, items, listing, obj
from mework_client.ctl.servers import DIALING, NAME

__all__ = [
    "COMMANDS",
    "format_completion",
    "format_prompt",
    "format_prompts",
    "format_read",
    "format_resources",
]

NOT_OFFERED = "not offered by this server"


def _arguments(prompt: dict[str, Any]) -> str:
    names = [
        f"{a.get('name')}{'' if a.get('required') else '?'}" for a in items(prompt, "arguments")
    ]
    return ", ".join(names)


def format_prompts(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    if not r.get("offered"):
        return f"Prompts: {style.dim(NOT_OFFERED)}"
    rows = [[p.get("name"), _arguments(p), describe(p)] for p in items(r, "prompts")]
    return listing("Prompts", ["NAME", "ARGUMENTS", "DESCRIPTION"], rows, style)


def format_resources(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    if not r.get("offered"):
        return f"Resources: {style.dim(NOT_OFFERED)}"
    resources = [[x.get("uri"), x.get("name"), x.get("mimeType")] for x in items(r, "resources")]
    templates = [
        [x.get("uriTemplate"), x.get("name"), x.get("mimeType")]
        for x in items(r, "resourceTemplates")
    ]
    return "\n".join(
        [
            listing("Resources", ["URI", "NAME", "MIME TYPE"], resources, style),
            listing("Templates", ["URI TEMPLATE", "NAME", "MIME TYPE"], templates, style),
        ]
    )


def _block_text(block: dict[str, Any]) -> str:
    """One content block as text: its text, or what the binary part is (never its bytes)."""
    if isinstance(block.get("text"), str):
        return str(block["text"])
    if isinstance(block.get("resource"), dict):
        return _block_text(block["resource"])
    kind = block.get("type") or "blob"
    size = f"{block['size']} bytes" if isinstance(block.get("size"), int) else "binary"
    mime = f", {block['mimeType']}" if block.get("mimeType") else ""
    where = f" {block['uri']}" if block.get("uri") and kind == "resource_link" else ""
    return f"[{kind}{where}: {size}{mime}]"


def _cut_lines(r: dict[str, Any], style: Style) -> list[str]:
    return [style.red(f"cut: {c}") for c in r.get("cut") or []]


def format_prompt(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    lines = [style.dim(str(r["description"]))] if r.get("description") else []
    for message in items(r, "messages"):
        lines.append(
            style.bold(f"{message.get('role')}:") + " " + _block_text(obj(message.get("content")))
        )
    return "\n".join(lines + _cut_lines(r, style))


def format_read(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    contents = items(r, "contents")
    lines: list[str] = []
    for content in contents:
        if len(contents) > 1:
            lines.append(style.bold(f"{content.get('uri')}:"))
        lines.append(_block_text(content))
    return "\n".join(lines + _cut_lines(r, style))


def format_completion(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    if not r.get("offered"):
        return f"Completion: {style.dim(NOT_OFFERED)}"
    values = [str(v) for v in r.get("values") or []]
    if r.get("hasMore"):
        total = f" of {r['total']}" if isinstance(r.get("total"), int) else ""
        values.append(style.dim(f"(more{total})"))
    return "\n".join(values) or style.dim("(no suggestions)")


def _prompt_params(args: Args) -> dict[str, Any]:
    return {"name": args.name, "prompt": args.prompt, "arguments": dict(args.arguments)}


def _complete_params(args: Args) -> dict[str, Any]:
    if (args.template is None) == (args.prompt is None):
        raise UsageError("give either --prompt PROMPT or --template URI_TEMPLATE")
    if args.template is not None:
        ref = {"type": "ref/resource", "uri": args.template}
    else:
        ref = {"type": "ref/prompt", "name": args.prompt}
    params: dict[str, Any] = {
        "name": args.name,
        "ref": ref,
        "argument": {"name": args.argument, "value": args.value},
    }
    if args.context:
        params["contextArguments"] = dict(args.context)
    return params


KEY_VALUES = arg(
    "arguments", nargs="*", type=pair, metavar="KEY=VALUE", help="the prompt's arguments"
)
INSPECTS = "Dials a short-lived session of its own; nothing of it is offered to a model."

COMMANDS: tuple[Command, ...] = (
    Command(
        "servers prompts",
        "list a server's prompts and their arguments",
        "meworkctl servers prompts everything",
        method="servers.prompts",
        args=(NAME,),
        params=pick(name="name"),
        render=show(format_prompts),
        wait=True,
        progress=DIALING,
        details=INSPECTS,
    ),
    Command(
        "servers prompt",
        "show a prompt's messages for the given arguments",
        "meworkctl servers prompt everything args-prompt city=Paris",
        method="servers.getPrompt",
        args=(NAME, arg("prompt", metavar="PROMPT", help="the prompt's name"), KEY_VALUES),
        params=_prompt_params,
        render=show(format_prompt),
        wait=True,
        progress=DIALING,
        details=INSPECTS,
    ),
    Command(
        "servers resources",
        "list a server's resources and resource templates",
        "meworkctl servers resources everything",
        method="servers.resources",
        args=(NAME,),
        params=pick(name="name"),
        render=show(format_resources),
        wait=True,
        progress=DIALING,
        details=INSPECTS,
    ),
    Command(
        "servers read",
        "read a resource (text shown, binary described; cut at mcp.max_reply_bytes)",
        "meworkctl servers read everything demo://resource/dynamic/text/1",
        method="servers.readResource",
        args=(NAME, arg("uri", metavar="URI", help="the resource's URI")),
        params=pick(name="name", uri="uri"),
        render=show(format_read),
        wait=True,
        progress=DIALING,
        details=INSPECTS + " Use --json for blobs (base64).",
    ),
    Command(
        "servers complete",
        "suggest values for a prompt's or a resource template's argument",
        "meworkctl servers complete everything --prompt completable-prompt department S",
        method="servers.complete",
        args=(
            NAME,
            arg("argument", metavar="ARGUMENT", help="the argument to complete"),
            arg("value", nargs="?", default="", metavar="VALUE", help="what is typed so far"),
            arg("--prompt", metavar="PROMPT", help="the prompt the argument belongs to"),
            arg("--template", metavar="URI_TEMPLATE", help="or the resource template"),
            arg(
                "--context",
                action="append",
                type=pair,
                default=[],
                metavar="KEY=VALUE",
                help="an earlier argument's value (repeatable)",
            ),
        ),
        params=_complete_params,
        render=show(format_completion),
        wait=True,
        progress=DIALING,
        details=INSPECTS + " Give --prompt or --template.",
    ),
)
