"""meworkctl's ``conv`` group: conversations, the servers they use and their approval level."""

from __future__ import annotations

from typing import Any

from mework_client.ctl.command import Command, arg, pick, say, show
from mework_client.ctl.layout import PLAIN, Style, format_table, items, key_values, obj, when
from mework_client.ctl.levels import LEVEL_CHOICES, LEVEL_HELP

__all__ = ["COMMANDS", "format_conversation", "format_conversations"]

CONV = arg("id", metavar="ID", help="the conversation id", complete="conversations")


def format_conversations(result: Any, style: Style = PLAIN) -> str:
    conversations = items(result, "conversations")
    if not conversations:
        return "No conversations."
    rows = [
        [
            c.get("id"),
            c.get("mcpServers"),
            c.get("approvalLevel"),
            c.get("preset"),
            when(c.get("updatedAt")),
        ]
        for c in conversations
    ]
    return format_table(["ID", "SERVERS", "LEVEL", "PRESET", "UPDATED"], rows, style)


def format_conversation(result: Any, style: Style = PLAIN) -> str:
    c = obj(result, "conversation")
    return key_values(
        [
            ("id", c.get("id")),
            ("servers", c.get("mcpServers", [])),
            ("level", c.get("approvalLevel")),
            ("preset", c.get("preset")),
            ("created", when(c.get("createdAt"))),
            ("updated", when(c.get("updatedAt"))),
        ],
        style,
    )


COMMANDS: tuple[Command, ...] = (
    Command(
        "conv create",
        "create a conversation",
        "meworkctl conv create --id chat-1 --server filesystem --level allow_edits",
        method="conversations.create",
        args=(
            arg("--id", help="its id (default: a new one)"),
            arg("--preset", help="take servers and level from this preset", complete="presets"),
            arg(
                "--server",
                dest="servers",
                action="append",
                metavar="NAME",
                help="select this server (repeatable)",
                complete="servers",
            ),
            arg("--level", help=LEVEL_HELP, **LEVEL_CHOICES),
        ),
        params=pick(id="id", preset="preset", mcpServers="servers", approvalLevel="level"),
        render=show(format_conversation),
    ),
    Command(
        "conv list",
        "list conversations",
        "meworkctl conv list",
        method="conversations.list",
        render=show(format_conversations),
    ),
    Command(
        "conv show",
        "show a conversation",
        "meworkctl conv show chat-1",
        method="conversations.get",
        args=(CONV,),
        params=pick(id="id"),
        render=show(format_conversation),
    ),
    Command(
        "conv select",
        "set the servers a conversation uses (none: clear)",
        "meworkctl conv select chat-1 filesystem docs",
        method="conversations.update",
        args=(
            CONV,
            arg("names", nargs="*", metavar="NAME", help="server names", complete="servers"),
        ),
        params=pick(id="id", mcpServers="names"),
        render=show(format_conversation),
    ),
    Command(
        "conv level",
        "set a conversation's approval level",
        "meworkctl conv level chat-1 full_access",
        method="conversations.update",
        args=(CONV, arg("level", help=LEVEL_HELP, **LEVEL_CHOICES)),
        params=pick(id="id", approvalLevel="level"),
        render=show(format_conversation),
    ),
    Command(
        "conv rm",
        "delete a conversation (closing its sessions)",
        "meworkctl conv rm chat-1",
        method="conversations.delete",
        args=(CONV,),
        params=pick(id="id"),
        render=say("deleted conversation {id}"),
    ),
)
