"""Requests a turn makes: list a server's tools, call one; replies shaped into plain data.

A tool call goes over the session's pipes directly where that is what the SDK would do
(:mod:`meworkd.mcp.direct`: handshake-era stdio sessions), else through the SDK's
``send_request``. Its reply is checked for the shape of a tool result and stripped of ``_meta``
in one walk (:func:`shape_reply`), and refused while it arrives once it passes its budget
(:mod:`meworkd.mcp.budget`); listings are bounded in bytes, items and pages and become
:class:`~meworkd.mcp.model.ToolInfo`.
"""

from collections.abc import Awaitable
from typing import Any

import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client import ClientRequestContext
from mcp_types.methods import validate_server_result
from pydantic import ValidationError

from meworkd.base import telemetry
from meworkd.mcp.budget import (
    MAX_LISTING_BYTES,
    MAX_LISTING_ITEMS,
    MAX_LISTING_PAGES,
    MESSAGE_LIMIT,
    REPLY_ALLOWANCE,
    REPLY_BUDGET,
    ReplyBudget,
)
from meworkd.mcp.callclock import CallClock, timed_out
from meworkd.mcp.direct import DirectCalls, DirectClientSession, ProgressSink, plainly_valid
from meworkd.mcp.errors import InvalidListing, NotAToolResult, TalkFailed, invalid_listing
from meworkd.mcp.model import ToolInfo
from meworkd.mcp.tasks import RawResult, TaskOptions, TaskTicket, run_task, ticket_of

__all__ = [
    "CallClock",
    "ProgressSink",
    "call_tool",
    "list_all",
    "list_tools",
    "resume_task",
    "shape_reply",
    "strip_meta",
    "timed_out",
]

MAX_INPUT_ROUNDS = 10  # rounds of a 2026-07-28 input_required result, then the call fails


async def list_all(client: ClientSession, what: str) -> list[Any]:
    """Every item of ``tools``/``prompts``/``resources``/``resource_templates``, all pages.

    A listing is bounded (``MAX_LISTING_ITEMS`` items, ``MAX_LISTING_BYTES`` bytes,
    ``MAX_LISTING_PAGES`` pages), so a server whose listing is huge or whose cursors never end
    fails clearly instead of growing the daemon or looping. A cursor seen before ends it.

    Raises:
        InvalidListing: a page that does not follow the MCP schema (e.g. a tool without
            ``inputSchema``; the SDK raises pydantic's ValidationError, which callers
            would otherwise let through as an internal error), or a listing over a bound
            (reason ``listing_too_large``).
    """
    cache = client.listings if isinstance(client, DirectClientSession) else None
    if cache is not None and (fresh := cache.get(what)) is not None:
        return fresh  # the server said it may be reused this long (2026-07-28 ttlMs)
    generation = cache.generation(what) if cache is not None else 0
    # Each page is bounded while it is read, too: by the budget of one message.
    budget = ReplyBudget(MESSAGE_LIMIT)
    token = REPLY_BUDGET.set(budget)
    try:
        items, ttl_ms = await _list_pages(getattr(client, f"list_{what}"), what)
        if cache is not None:
            cache.keep(what, items, ttl_ms, generation)
        return items
    except MCPError:
        if not budget.refused:
            raise
        raise _too_large(what, f"a page of more than {MESSAGE_LIMIT} bytes") from None
    finally:
        REPLY_BUDGET.reset(token)


async def _list_pages(method: Any, what: str) -> tuple[list[Any], int]:
    """Every page's items, and how long all of them stay fresh (the least ``ttlMs``)."""
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    size = 0
    ttl_ms: int | None = None
    for _ in range(MAX_LISTING_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        try:
            page = await method(params=params)
        except ValidationError as exc:
            raise invalid_listing(what, exc) from None
        items += getattr(page, what)
        page_ttl = int(getattr(page, "ttl_ms", 0) or 0)
        ttl_ms = page_ttl if ttl_ms is None else min(ttl_ms, page_ttl)
        size += len(page.model_dump_json(by_alias=True, exclude_none=True))
        if len(items) > MAX_LISTING_ITEMS:
            raise _too_large(what, f"more than {MAX_LISTING_ITEMS} items")
        if size > MAX_LISTING_BYTES:
            raise _too_large(what, f"more than {MAX_LISTING_BYTES} bytes")
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            return items, ttl_ms or 0
        seen.add(cursor)
    raise _too_large(what, f"more than {MAX_LISTING_PAGES} pages")


def _too_large(what: str, bound: str) -> InvalidListing:
    wire = what.replace("resource_templates", "resources/templates")
    return InvalidListing(
        f"the server's {wire}/list listing is too large ({bound}); it was refused",
        reason="listing_too_large",
        problems=[],
    )


async def list_tools(client: ClientSession) -> list[ToolInfo]:
    """Every tool the server lists, as plain data."""
    return [_tool_info(tool) for tool in await list_all(client, "tools")]


def _tool_info(tool: types.Tool) -> ToolInfo:
    annotations = tool.annotations
    return ToolInfo(
        name=tool.name,
        title=tool.title or (annotations.title if annotations else None),
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=(
            annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
            if annotations
            else None
        ),
        meta=tool.meta,
        needs_tasks=bool(tool.execution and tool.execution.task_support == "required"),
    )


async def call_tool(
    client: ClientSession,
    tool: str,
    arguments: dict[str, Any],
    *,
    clock: CallClock,
    on_progress: ProgressSink,
    reply_limit: int | None = None,
    tasks: TaskOptions | None = None,
) -> dict[str, Any]:
    """Call ``tool`` and return its reply shaped by :func:`shape_reply`.

    ``reply_limit`` (``mcp.max_reply_bytes``): a reply that passes it (plus the envelope's
    ``REPLY_ALLOWANCE``) is refused by the transport while it arrives. ``tasks``: how a reply
    that is an MCP task is followed to its result (:mod:`meworkd.mcp.tasks`); without it, such
    a reply is not a tool result.

    Raises (mapped by the pool through :mod:`meworkd.mcp.errors`): MCPError (an error reply,
    a timeout, the connection closing), ValidationError or NotAToolResult (not a tool result);
    TalkFailed with reason ``reply_too_large`` for a refused reply.
    """
    return await _within(reply_limit, _call(client, tool, arguments, clock, on_progress, tasks))


async def resume_task(
    client: ClientSession,
    ticket: TaskTicket,
    *,
    clock: CallClock,
    tasks: TaskOptions,
    reply_limit: int,
) -> dict[str, Any]:
    """The reply of a call whose task is followed again (meworkd restarted while a Streamable
    HTTP server ran it), shaped and bounded as :func:`call_tool`'s."""
    return await _within(reply_limit, _resumed(client, ticket, clock, tasks))


async def _resumed(
    client: ClientSession, ticket: TaskTicket, clock: CallClock, tasks: TaskOptions
) -> dict[str, Any]:
    return shape_reply(await run_task(client, ticket, tasks, clock, resumed=True))


async def _within(reply_limit: int | None, call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """``call``'s outcome, with a reply over ``reply_limit`` (``mcp.max_reply_bytes``, plus the
    envelope's ``REPLY_ALLOWANCE``) refused while it arrives (reason ``reply_too_large``)."""
    budget = None if reply_limit is None else ReplyBudget(reply_limit + REPLY_ALLOWANCE)
    token = REPLY_BUDGET.set(budget)
    try:
        return await call
    except MCPError:
        if budget is None or not budget.refused:
            raise
        assert reply_limit is not None
        raise _reply_refused(budget.limit, reply_limit) from None
    finally:
        REPLY_BUDGET.reset(token)


def _reply_refused(read: int, limit: int) -> TalkFailed:
    return TalkFailed(
        f"a tool reply passed {read} bytes while it arrived (limit {limit} bytes)",
        reason="reply_too_large",
        call_text=(
            f"The tool's reply passed {read} bytes while it was still arriving, over the limit "
            f"of {limit} bytes, so it was refused (not truncated). Ask for less: use the tool's "
            "pagination, filtering or limit parameters if it has them."
        ),
    )


async def _call(
    client: ClientSession,
    tool: str,
    arguments: dict[str, Any],
    clock: CallClock,
    on_progress: ProgressSink,
    tasks: TaskOptions | None,
) -> dict[str, Any]:
    # Every call runs under its clock's watchdog (not the SDK's read timeout, which would keep
    # running while a person answers the server's question); its cancellation (the caller's
    # scope catches it) also sends notifications/cancelled.
    def progressed(progress: float, total: float | None, message: str | None) -> None:
        clock.progressed()
        on_progress(progress, total, message)

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        progressed(progress, total, message)

    direct = client.direct if isinstance(client, DirectClientSession) else None
    # A 2025-11-25 task is asked for, on the pipes (the SDK's check of a tools/call result
    # refuses its CreateTaskResult); a 2026-07-28 server decides on its own.
    legacy_task = tasks is not None and tasks.as_task and direct is not None
    clock.start()
    try:
        if direct is not None:
            raw = await _direct_call(client, direct, tool, arguments, progressed, legacy_task)
        else:
            raw = await _call_rounds(client, tool, arguments, progress)
    finally:
        clock.stop()
    if tasks is not None and (ticket := ticket_of(raw, legacy=legacy_task)) is not None:
        raw = await run_task(client, ticket, tasks, clock)
    return shape_reply(raw)


async def _call_rounds(
    client: ClientSession, tool: str, arguments: dict[str, Any], progress: Any
) -> dict[str, Any]:
    """tools/call, and on a 2026-07-28 session the rounds of an ``input_required`` result.

    Each round's input requests (elicitation, sampling, roots) go through the session's own
    callbacks, so a frontend sees the same questions whichever revision the server speaks;
    ``requestState`` is echoed exactly; at most ``MAX_INPUT_ROUNDS`` rounds.
    """
    responses: dict[str, Any] | None = None
    state: str | None = None
    url_asked = False
    for _ in range(MAX_INPUT_ROUNDS):
        # send_request, not call_tool: no client-side outputSchema validation (a mismatching
        # reply is still the server's reply) and no implicit tools/list.
        params = types.CallToolRequestParams(
            name=tool,
            arguments=arguments,
            input_responses=responses,
            request_state=state,
        )
        try:
            result = await client.send_request(
                types.CallToolRequest(params=params), RawResult, progress_callback=progress
            )
        except MCPError as exc:
            if exc.code != types.URL_ELICITATION_REQUIRED or url_asked:
                raise
            url_asked = True  # asked once; a second -32042 is the call's answer
            if not await _consent_to_urls(client, exc):
                raise
            continue
        raw = result.model_extra or {}
        if raw.get("resultType") != "input_required":
            return raw
        try:
            required = types.InputRequiredResult.model_validate(raw)
        except ValidationError:
            raise NotAToolResult from None
        responses, state = {}, required.request_state
        for key, request in (required.input_requests or {}).items():
            context = ClientRequestContext(session=client, request_id=key)
            answer = await client.dispatch_input_request(context, request)
            if isinstance(answer, types.ErrorData):
                raise MCPError.from_error_data(answer)
            responses[key] = answer
        responses = responses or None
    raise MCPError(
        types.INTERNAL_ERROR, f"the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
    )


async def _direct_call(
    client: ClientSession,
    direct: DirectCalls,
    tool: str,
    arguments: dict[str, Any],
    progressed: ProgressSink,
    as_task: bool,
) -> dict[str, Any]:
    """tools/call on the pipes themselves (:mod:`meworkd.mcp.direct`): a handshake-era session,
    so no input rounds; a -32042 is answered as on the SDK path. The result is checked against
    the session's revision as the SDK checks it; ``as_task``: asked for as a 2025-11-25 task,
    whose answer (``{task}``) is checked when it is followed."""
    url_asked = False
    task: dict[str, Any] | None = {} if as_task else None
    while True:
        try:
            raw = await direct.call_tool(
                tool, arguments, progressed, telemetry.trace_meta(), task=task
            )
        except MCPError as exc:
            if exc.code != types.URL_ELICITATION_REQUIRED or url_asked:
                raise
            url_asked = True
            if not await _consent_to_urls(client, exc):
                raise
            continue
        if as_task and "task" in raw and "content" not in raw:
            return raw
        if not plainly_valid(raw):
            validate_server_result("tools/call", client.protocol_version or "2025-11-25", raw)
        return raw


async def _consent_to_urls(client: ClientSession, exc: MCPError) -> bool:
    """A -32042 "URL elicitation required": each URL goes to the person as a URL elicitation
    would; True when every one was accepted (then the call is made again, once)."""
    try:
        required = types.ElicitationRequiredErrorData.model_validate(exc.error.data)
    except ValidationError:
        return False
    for index, params in enumerate(required.elicitations):
        context = ClientRequestContext(session=client, request_id=f"url-required-{index}")
        answer = await client.dispatch_input_request(context, types.ElicitRequest(params=params))
        if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
            return False
    return bool(required.elicitations)


def shape_reply(raw: dict[str, Any]) -> dict[str, Any]:
    """``{content, structuredContent?, isError}`` from a raw tools/call result, in one walk:
    each content block is checked and copied without its ``_meta`` keys in the same pass.

    Raises:
        NotAToolResult: content is not a list of typed blocks, structuredContent not an
            object, or isError not a boolean.
    """
    content = raw.get("content", [])
    structured = raw.get("structuredContent")
    is_error = raw.get("isError", False)
    if (
        not isinstance(content, list)
        or not isinstance(structured, dict | None)
        or not isinstance(is_error, bool | None)
    ):
        raise NotAToolResult
    blocks: list[Any] = []
    for block in content:
        if not isinstance(block, dict) or "type" not in block:
            raise NotAToolResult
        blocks.append({k: strip_meta(v) for k, v in block.items() if k != "_meta"})
    out: dict[str, Any] = {"content": blocks}
    if structured is not None:
        out["structuredContent"] = structured
    out["isError"] = bool(is_error)
    return out


def strip_meta(value: Any) -> Any:
    """``value`` without any ``_meta`` key, at any depth."""
    if isinstance(value, dict):
        return {k: strip_meta(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [strip_meta(v) for v in value]
    return value
