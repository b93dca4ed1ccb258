"""Inspection requests for a server's detail page: prompts, resources, completion; plain data.

Run on a short-lived session of their own (never a conversation's), so nothing reaches a model.
Every reply is bounded while it arrives (one message's budget) and what is shown is cut to
``mcp.max_reply_bytes``, saying what was cut.
"""

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError

from meworkd.base.errors import InvalidParams
from meworkd.mcp.budget import MESSAGE_LIMIT, REPLY_BUDGET, ReplyBudget
from meworkd.mcp.errors import TALK_ERRORS, TalkFailed, talk_failure
from meworkd.mcp.session import McpSession
from meworkd.mcp.tools import list_all
from meworkd.settings import ServerConfig

__all__ = [
    "InspectionRequest",
    "complete",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "read_resource",
    "run_inspection",
]

T = TypeVar("T")
# A request gets the leased client and the capabilities the server declared (as on the wire).
InspectionRequest = Callable[[ClientSession, dict[str, Any]], Awaitable[T]]


async def run_inspection(
    session: McpSession, config: ServerConfig, request: InspectionRequest[T]
) -> T:
    """``request`` on ``session`` within the server's timeout, its reply bounded in bytes.

    Raises:
        TalkFailed: the request failed (an error reply, a timeout, a reply too large).
    """
    budget = ReplyBudget(MESSAGE_LIMIT)
    token = REPLY_BUDGET.set(budget)
    try:
        with anyio.fail_after(config.timeout):
            async with session.lease() as client:
                return await request(client, session.capabilities or {})
    except TALK_ERRORS as exc:
        if isinstance(exc, MCPError) and budget.refused:
            raise TalkFailed(
                f"the server's reply passed {MESSAGE_LIMIT} bytes while it arrived; refused",
                reason="reply_too_large",
                call_text="",
            ) from None
        raise talk_failure(exc, session.server, config) from None
    finally:
        REPLY_BUDGET.reset(token)


def _dump(item: Any) -> dict[str, Any]:
    out: dict[str, Any] = item.model_dump(by_alias=True, mode="json", exclude_none=True)
    return out


async def list_prompts(client: ClientSession, caps: dict[str, Any]) -> dict[str, Any]:
    """``{offered, prompts}``; ``prompts`` null when the server does not offer them."""
    prompts = await _optional(client, "prompts") if "prompts" in caps else None
    return {"offered": prompts is not None, "prompts": prompts}


async def list_resources(client: ClientSession, caps: dict[str, Any]) -> dict[str, Any]:
    """``{offered, resources, resourceTemplates}`` (lists null when not offered)."""
    resources = templates = None
    if "resources" in caps:
        resources = await _optional(client, "resources")
        templates = await _optional(client, "resource_templates")
    return {
        "offered": resources is not None,
        "resources": resources,
        "resourceTemplates": templates,
    }


async def _optional(client: ClientSession, what: str) -> list[dict[str, Any]] | None:
    """Every item of ``what``, or None when the server answers "method not found" (a server
    may announce prompts or resources and not serve them, like mcp-server-sqlite)."""
    try:
        return [_dump(item) for item in await list_all(client, what)]
    except MCPError as exc:
        if exc.code != types.METHOD_NOT_FOUND:
            raise
        return None


def get_prompt(
    prompt: str, arguments: dict[str, str], limit: int
) -> InspectionRequest[dict[str, Any]]:
    """prompts/get: ``{description, messages, cut}``, text cut to ``limit`` bytes in all."""

    async def request(client: ClientSession, caps: dict[str, Any]) -> dict[str, Any]:
        del caps  # a prompt the server does not offer is its own "not found"
        result = await client.get_prompt(prompt, arguments, allow_input_required=True)
        if isinstance(result, types.InputRequiredResult):
            raise _asks_for_input("prompts/get")
        # Only what the API promises: a 2026-07-28 result also carries resultType and _meta.
        dumped = _dump(result)
        shown: dict[str, Any] = {k: dumped[k] for k in ("description", "messages") if k in dumped}
        cutter = _Cutter(limit)
        for message in shown.get("messages", []):
            content = message.get("content")
            if isinstance(content, dict):
                cutter.block(content)
        return {**shown, "cut": cutter.cut}

    return request


def read_resource(uri: str, limit: int) -> InspectionRequest[dict[str, Any]]:
    """resources/read: ``{contents, cut}``; text cut and blobs left out past ``limit`` bytes."""

    async def request(client: ClientSession, caps: dict[str, Any]) -> dict[str, Any]:
        del caps
        result = await client.read_resource(uri, allow_input_required=True)
        if isinstance(result, types.InputRequiredResult):
            raise _asks_for_input("resources/read")
        cutter = _Cutter(limit)
        contents = [_dump(c) for c in result.contents]
        for content in contents:
            cutter.block(content)
        return {"contents": contents, "cut": cutter.cut}

    return request


def _asks_for_input(method: str) -> TalkFailed:
    # A 2026-07-28 server may answer with input requests (a form, a sampling); inspection has
    # no person or conversation to route them to, so it says so instead of guessing.
    return TalkFailed(
        f"the server asks for input (elicitation or sampling) to answer {method}; "
        "inspection does not answer such requests",
        reason="input_required",
        call_text="",
    )


class _Cutter:
    """Cuts text and leaves out blobs once ``limit`` bytes are shown; ``cut`` says what went."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.limit = limit
        self.cut: list[str] = []

    def block(self, block: dict[str, Any]) -> None:
        where = block.get("uri") or block.get("type") or "content"
        if isinstance(block.get("text"), str):
            data = block["text"].encode()
            if len(data) > self.left:
                block["text"] = data[: self.left].decode("utf-8", "ignore")
                block["truncated"] = True
                self.cut.append(
                    f"{where}: text cut to {self.left} of {len(data)} bytes "
                    f"(mcp.max_reply_bytes is {self.limit})"
                )
            self.left -= min(len(data), self.left)
        for key in ("blob", "data"):  # resource blobs; image and audio blocks
            if isinstance(block.get(key), str):
                self._blob(block, key, where)
        if isinstance(block.get("resource"), dict):  # an embedded resource in a prompt
            self.block(block["resource"])

    def _blob(self, block: dict[str, Any], key: str, where: str) -> None:
        try:
            size = len(base64.b64decode(block[key], validate=True))
        except (binascii.Error, ValueError):
            size = len(block[key])
        block["size"] = size
        if size > self.left:
            block[key] = None
            block["truncated"] = True
            self.cut.append(
                f"{where}: {size}-byte {key} left out (over mcp.max_reply_bytes, {self.limit})"
            )
        else:
            self.left -= size


def complete(
    ref: dict[str, Any], argument: dict[str, Any], context: dict[str, str] | None
) -> InspectionRequest[dict[str, Any]]:
    """completion/complete for a prompt's or a resource template's argument.

    ``ref``: ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource", "uri"}`` (the
    template); ``argument``: ``{name, value}``; ``context``: earlier arguments' values.
    """
    reference = _reference(ref)
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise InvalidParams("argument must be {name, value} with string values")

    async def request(client: ClientSession, caps: dict[str, Any]) -> dict[str, Any]:
        if "completions" not in caps:
            return {"offered": False, "values": [], "total": None, "hasMore": False}
        result = await client.complete(reference, {"name": name, "value": value}, context)
        done = result.completion
        return {
            "offered": True,
            "values": list(done.values),
            "total": done.total,
            "hasMore": bool(done.has_more),
        }

    return request


def _reference(ref: dict[str, Any]) -> types.PromptReference | types.ResourceTemplateReference:
    kind = ref.get("type")
    if kind == "ref/prompt" and isinstance(ref.get("name"), str):
        return types.PromptReference(type="ref/prompt", name=ref["name"])
    if kind == "ref/resource" and isinstance(ref.get("uri"), str):
        return types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    raise InvalidParams(
        'ref must be {"type": "ref/prompt", "name": ...} or {"type": "ref/resource", "uri": ...}'
    )
