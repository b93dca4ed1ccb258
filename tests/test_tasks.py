"""MCP tasks (issue 30.1): a tool that answers with a task runs to its end through the call,
with its questions asked of a person, its end announced and recorded; cancelled on the server
when its call ends early; bounded; followed again when meworkd restarts (an HTTP server's).

The peer is tests/servers/tasks.py (the 2026-07-28 extension, written from the spec on the
SDK's server-side extension hooks) over real Streamable HTTP, and over stdio behind the
modern-only wrapper; the 2025-11-25 shape is met in the official server-everything. The
server's ``--record`` file shows what meworkd sent it (``tasks/cancel`` above all).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect
from mework_protocol.audit import is_question

from meworkd.base.errors import InvalidSettings
from meworkd.core import tasks as core_tasks
from meworkd.core.catalog import bind
from meworkd.mcp import ToolInfo
from meworkd.mcp.tasks import MAX_POLL_SECONDS, MIN_POLL_SECONDS, ticket_of
from meworkd.settings.parse import parse_mcp_options, parse_settings
from tests.common import BOUND, MODERN_ONLY, PY, text_of
from tests.daemon_helpers import (
    PEERS,
    begin_turn,
    bound,
    call_tool,
    serving_for_module,
    start_call,
    start_daemon,
    wait_event,
    write_settings,
)

pytestmark = pytest.mark.anyio

TASKS_SERVER = str(Path(__file__).parent / "servers" / "tasks.py")
TASK_TOPICS = ["task.started", "task.progress", "task.input_required", "task.completed"]
EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


class Recorded:
    """The tasks server's ``--record`` file: what meworkd sent it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def of(self, method: str, task_id: str | None = None) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines()
            if line["method"] == method and task_id in (None, line.get("taskId"))
        ]

    def task_ids(self) -> list[str]:
        """The task ids meworkd asked about, in the order first seen."""
        seen: dict[str, None] = {}
        for line in self.lines():
            if line["method"].startswith("tasks/"):
                seen.setdefault(line["taskId"], None)
        return list(seen)


@pytest.fixture(scope="module")
def http_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Recorded]]:
    """One HTTP tasks server for the module (tasks are keyed by unguessable ids, and each test
    has its own conversation, so tests do not interfere)."""
    record = tmp_path_factory.mktemp("tasks") / "record.jsonl"
    with serving_for_module(TASKS_SERVER, "--http", "--record", str(record)) as base:
        yield f"{base}/mcp", Recorded(record)


@pytest.fixture
async def daemon(
    short_tmp: Path, http_tasks: tuple[str, Recorded]
) -> AsyncIterator[tuple[AsyncClient, AsyncClient]]:
    """A daemon with the HTTP tasks server as ``work``: a client, and one subscribed to events."""
    url, _record = http_tasks
    servers = {"work": {"type": "http", "url": url}}
    async with (
        start_daemon(short_tmp, servers) as running,
        connect(running.socket) as client,
        connect(running.socket) as events,
    ):
        topics = [*TASK_TOPICS, "task.failed", "call.finished", "elicitation.requested"]
        await events.call("events.subscribe", {"topics": topics})
        yield client, events


def started_task(record: Recorded, before: list[str]) -> str:
    """The one task id meworkd asked about that it had not before."""
    new = [task_id for task_id in record.task_ids() if task_id not in before]
    assert len(new) == 1, new
    return new[0]


async def test_a_task_runs_to_its_result_and_is_on_record(
    daemon: tuple[AsyncClient, AsyncClient], http_tasks: tuple[str, Recorded]
) -> None:
    client, events = daemon
    _url, record = http_tasks
    before = record.task_ids()
    turn = await begin_turn(client, ["work"])
    reply = await call_tool(
        client, turn, "work", "job", {"seconds": 0.2, "text": "the answer"}, "t1"
    )
    assert (reply["isError"], text_of(reply)) == (False, "the answer")
    started = await wait_event(events, "task.started", lambda d: d["callId"] == "t1")
    assert (started["server"], started["tool"], started["status"]) == ("work", "job", "working")
    assert started["resumable"] is True
    done = await wait_event(events, "task.completed", lambda d: d["callId"] == "t1")
    assert done["status"] == "completed"
    task = await client.call("tasks.get", {"callId": "t1"})
    assert (task["status"], task["followed"]) == ("completed", False)
    assert await client.call("tasks.list", {"openOnly": True}) == {"tasks": []}
    audit = await client.call("audit.list", {"conversationId": turn["conversationId"]})
    assert [(e["callId"], e["decision"], e["isError"]) for e in audit["entries"]] == [
        ("t1", "allow", False)
    ]
    # The server's task id stays in the daemon: frontends know the task by its call.
    task_id = started_task(record, before)
    listed = await client.call("tasks.list", {"conversationId": turn["conversationId"]})
    assert task_id not in json.dumps(listed)
    assert task_id not in json.dumps(started)
    # Polled with tasks/get, each carrying Mcp-Name (the extension asks it of HTTP clients).
    polls = record.of("tasks/get", task_id)
    assert polls
    assert all(p["mcpName"] == task_id for p in polls)
    assert record.of("tasks/cancel", task_id) == []


async def test_an_error_result_and_a_failed_task(
    daemon: tuple[AsyncClient, AsyncClient],
) -> None:
    client, _events = daemon
    turn = await begin_turn(client, ["work"])
    errored = await call_tool(
        client, turn, "work", "job", {"outcome": "error_result", "text": "no"}, "e1"
    )
    assert (errored["isError"], text_of(errored)) == (True, "no")
    assert (await client.call("tasks.get", {"callId": "e1"}))["status"] == "completed"
    failed = await call_tool(
        client, turn, "work", "job", {"outcome": "fail", "text": "disk on fire"}, "f1"
    )
    assert failed["isError"] is True
    assert "disk on fire" in text_of(failed)
    assert (await client.call("tasks.get", {"callId": "f1"}))["status"] == "failed"


async def test_a_task_asks_and_a_person_answers(
    daemon: tuple[AsyncClient, AsyncClient], http_tasks: tuple[str, Recorded]
) -> None:
    client, events = daemon
    _url, record = http_tasks
    before = record.task_ids()
    turn = await begin_turn(client, ["work"])
    async with anyio.create_task_group() as tg:
        replies = start_call(tg, client, turn, "work", "ask", {"message": "Which colour?"}, "a1")
        # (in this order: the task says it waits, then its question is asked)
        waiting = await wait_event(events, "task.input_required", lambda d: d["callId"] == "a1")
        assert waiting["status"] == "input_required"
        asked = await wait_event(events, "elicitation.requested", lambda d: d["callId"] == "a1")
        assert asked["message"] == "Which colour?"
        answer = {"elicitationId": asked["elicitationId"], "action": "accept"}
        await client.call("elicitations.respond", {**answer, "content": {"answer": "blue"}})
    assert text_of(replies[0]) == "answer: blue"
    # Asked once although every poll until the answer repeats the question.
    task_id = started_task(record, before)
    assert len(record.of("tasks/update", task_id)) == 1


async def test_a_question_the_task_stops_asking_is_taken_back(
    daemon: tuple[AsyncClient, AsyncClient],
) -> None:
    client, events = daemon
    await events.call(
        "events.subscribe", {"topics": ["elicitation.requested", "elicitation.resolved"]}
    )
    turn = await begin_turn(client, ["work"])
    async with anyio.create_task_group() as tg:
        arguments = {"message": "Quick?", "give_up_after": 1}
        replies = start_call(tg, client, turn, "work", "ask", arguments, "q1")
        asked = await wait_event(events, "elicitation.requested", lambda d: d["callId"] == "q1")
        # Nobody answers; the server stops asking and fails the task: the question goes.
        gone = await wait_event(
            events, "elicitation.resolved", lambda d: d["elicitationId"] == asked["elicitationId"]
        )
        assert gone["action"] == "cancel"
    assert replies[0]["isError"] is True
    assert "nobody answered the question" in text_of(replies[0])
    assert (await client.call("elicitations.list"))["elicitations"] == []
    assert (await client.call("tasks.get", {"callId": "q1"}))["status"] == "failed"


async def test_a_cancelled_call_cancels_its_task_on_the_server(
    daemon: tuple[AsyncClient, AsyncClient], http_tasks: tuple[str, Recorded]
) -> None:
    client, events = daemon
    _url, record = http_tasks
    turn = await begin_turn(client, ["work"])
    for call_id, cancel in (("c1", "turns.cancel"), ("c2", "tasks.cancel")):
        before = record.task_ids()
        async with anyio.create_task_group() as tg:
            replies = start_call(tg, client, turn, "work", "forever", {}, call_id)
            await wait_event(events, "task.started", lambda d, c=call_id: d["callId"] == c)
            params = {"turnId": turn["turnId"], "callId": call_id}
            if cancel == "tasks.cancel":
                params = {"callId": call_id}
            await client.call(cancel, params)
        assert text_of(replies[0]) == "The call was cancelled."
        task_id = started_task(record, before)
        assert len(record.of("tasks/cancel", task_id)) == 1, cancel
        task = await client.call("tasks.get", {"callId": call_id})
        assert (task["status"], task["message"]) == ("cancelled", "cancelled by the user")
    assert await client.call("tasks.cancel", {"callId": "c2"}) == {"cancelled": False}
    with pytest.raises(RpcError) as unknown:
        await client.call("tasks.get", {"callId": "never"})
    assert unknown.value.kind == "task_not_found"


async def test_hostile_tasks_end_clearly_and_are_cancelled(
    daemon: tuple[AsyncClient, AsyncClient], http_tasks: tuple[str, Recorded]
) -> None:
    client, _events = daemon
    _url, record = http_tasks
    turn = await begin_turn(client, ["work"])
    cases = [
        ("garbage", {"kind": "bad_status"}, "was not a valid task", True),
        ("garbage", {"kind": "not_object"}, "was not a valid task", True),
        ("garbage", {"kind": "unknown"}, "no longer knows the task", False),
        ("big", {"bytes": 200_000}, "over the limit of 65536 bytes", True),
    ]
    for index, (tool, arguments, said, cancelled) in enumerate(cases):
        before = record.task_ids()
        reply = await call_tool(client, turn, "work", tool, arguments, f"h{index}")
        assert reply["isError"] is True
        assert said in text_of(reply), (arguments, text_of(reply))
        task_id = started_task(record, before)
        assert bool(record.of("tasks/cancel", task_id)) is cancelled, arguments
        assert (await client.call("tasks.get", {"callId": f"h{index}"}))["status"] == "failed"
    # A pollIntervalMs of 0 is held at the floor: a few polls, not a tight loop.
    before = record.task_ids()
    reply = await call_tool(client, turn, "work", "interval", {"ms": 0}, "i0")
    assert text_of(reply) == "interval 0"
    polls = record.of("tasks/get", started_task(record, before))
    assert len(polls) <= 0.3 / MIN_POLL_SECONDS + 3, len(polls)
    # A task that never ends is bounded by mcp.task_max_seconds, then cancelled on the server.
    await client.call("settings.setMcpOptions", {"task_max_seconds": 0.5})
    before = record.task_ids()
    reply = await call_tool(client, turn, "work", "forever", {}, "long")
    assert "still running after 0.5 seconds" in text_of(reply)
    assert record.of("tasks/cancel", started_task(record, before))


async def test_a_server_holds_a_bounded_number_of_open_tasks(
    daemon: tuple[AsyncClient, AsyncClient],
    http_tasks: tuple[str, Recorded],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(core_tasks, "MAX_OPEN_TASKS_PER_SERVER", 1)
    client, events = daemon
    _url, record = http_tasks
    turn = await begin_turn(client, ["work"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(call_tool, client, turn, "work", "forever", {}, "open1")
        await wait_event(events, "task.started", lambda d: d["callId"] == "open1")
        before = record.task_ids()
        refused = await call_tool(client, turn, "work", "job", {}, "over")
        assert "already runs 1 tasks" in text_of(refused)
        assert record.of("tasks/cancel", started_task(record, before))
        with pytest.raises(RpcError):
            await client.call("tasks.get", {"callId": "over"})  # never recorded
        await client.call("tasks.cancel", {"callId": "open1"})


async def until_asked(client: AsyncClient, events: AsyncClient, call_id: str) -> dict[str, Any]:
    """The open elicitation of ``call_id``: one listed already, or the next one asked (the
    subscription is made before the list is read, so none falls between)."""
    pending = await client.call("elicitations.list")
    for asked in pending["elicitations"]:
        if asked["callId"] == call_id:
            return dict(asked)
    return await wait_event(events, "elicitation.requested", lambda d: d["callId"] == call_id)


async def test_an_http_servers_tasks_outlive_a_daemon_restart(
    short_tmp: Path, http_tasks: tuple[str, Recorded]
) -> None:
    url, record = http_tasks
    servers = {"work": {"type": "http", "url": url}}
    colours = {"r1": "green", "r2": "amber"}  # two tasks asking on one session
    async with start_daemon(short_tmp, servers) as running, connect(running.socket) as client:
        await client.call("events.subscribe", {"topics": ["elicitation.requested"]})
        turn = await begin_turn(client, ["work"])
        conversation = turn["conversationId"]
        before = record.task_ids()
        async with anyio.create_task_group() as tg:

            async def ask(call_id: str) -> None:
                with pytest.raises((RpcError, ConnectionError)):  # meworkd stops first
                    await call_tool(
                        client, turn, "work", "ask", {"message": f"Colour {call_id}?"}, call_id
                    )

            for call_id in colours:
                tg.start_soon(ask, call_id)
                await until_asked(client, client, call_id)  # each question bound to its call
            last_seen = (await client.call("tasks.get", {"callId": "r2"}))["updatedAt"]
            running.daemon.request_shutdown()
    task_ids = [t for t in record.task_ids() if t not in before]
    assert len(task_ids) == 2
    assert [record.of("tasks/cancel", t) for t in task_ids] == [[], []]  # stopping: no cancel
    async with start_daemon(short_tmp) as running, connect(running.socket) as client:
        # The tasks ask again before any frontend watches questions: their questions wait
        # for one (answered "cancel" at once, as a live call's would be, they would end them).
        await client.call("events.subscribe", {"topics": ["task.input_required"]})
        if (await client.call("tasks.get", {"callId": "r2"}))["updatedAt"] == last_seen:
            await wait_event(client, "task.input_required", lambda d: d["callId"] == "r2")
        topics = ["elicitation.requested", "call.finished"]
        await client.call("events.subscribe", {"topics": topics})
        for call_id, colour in colours.items():
            asked = await until_asked(client, client, call_id)
            assert asked["message"] == f"Colour {call_id}?"
            answer = {"elicitationId": asked["elicitationId"], "action": "accept"}
            await client.call("elicitations.respond", {**answer, "content": {"answer": colour}})
            finished = await wait_event(
                client, "call.finished", lambda d, c=call_id: d["callId"] == c
            )
            assert (finished["decision"], finished["isError"]) == ("allow", False)
            kept = await client.call("calls.result", {"callId": call_id})
            assert text_of(kept["result"]) == f"answer: {colour}"
            task = await client.call("tasks.get", {"callId": call_id})
            assert (task["status"], task["resumable"]) == ("completed", True)
        # One outcome on each call's own audit entry (beside the questions'): not
        # "interrupted" by the restart.
        audit = await client.call("audit.list", {"conversationId": conversation})
        calls = [e for e in audit["entries"] if not is_question(e)]
        assert sorted((e["callId"], e["decision"]) for e in calls) == [
            ("r1", "allow"),
            ("r2", "allow"),
        ]


class Relay:
    """A TCP relay from a port of its own to the tasks server, which the test closes and opens
    again: the server unreachable for a while without losing its tasks."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self._scope: anyio.CancelScope | None = None

    async def open(self, tg: anyio.abc.TaskGroup) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        scope = self._scope = anyio.CancelScope()

        async def serve() -> None:
            with scope:
                async with listener:
                    await listener.serve(self._pipe)

        tg.start_soon(serve)

    def close(self) -> None:
        assert self._scope is not None
        self._scope.cancel()  # the listener and every relayed connection

    async def _pipe(self, inbound: anyio.abc.SocketStream) -> None:
        async with (
            inbound,
            await anyio.connect_tcp("127.0.0.1", self.target) as outbound,
            anyio.create_task_group() as tg,
        ):

            async def copy(src: anyio.abc.SocketStream, dst: anyio.abc.SocketStream) -> None:
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    async for chunk in src:
                        await dst.send(chunk)
                tg.cancel_scope.cancel()

            tg.start_soon(copy, inbound, outbound)
            tg.start_soon(copy, outbound, inbound)


async def start_asking(root: Path, servers: dict[str, Any], call_id: str) -> str:
    """A daemon on ``root`` whose ``work`` task asks a question, stopped while it waits; the
    conversation's id."""
    async with start_daemon(root, servers) as running, connect(running.socket) as client:
        await client.call("events.subscribe", {"topics": ["elicitation.requested"]})
        turn = await begin_turn(client, ["work"])
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                with pytest.raises((RpcError, ConnectionError)):
                    await call_tool(client, turn, "work", "ask", {"message": "?"}, call_id)

            tg.start_soon(ask)
            await until_asked(client, client, call_id)
            running.daemon.request_shutdown()
    return str(turn["conversationId"])


async def test_a_task_waits_for_its_server_after_a_restart(
    short_tmp: Path, http_tasks: tuple[str, Recorded]
) -> None:
    url, _record = http_tasks
    async with anyio.create_task_group() as tg:
        relay = Relay(int(url.split(":")[2].split("/")[0]))
        await relay.open(tg)
        servers = {"work": {"type": "http", "url": f"http://127.0.0.1:{relay.port}/mcp"}}
        await start_asking(short_tmp, servers, "w1")
        relay.close()
        async with start_daemon(short_tmp) as running, connect(running.socket) as client:
            topics = ["task.progress", "elicitation.requested", "call.finished"]
            await client.call("events.subscribe", {"topics": topics})
            task = await client.call("tasks.get", {"callId": "w1"})
            if not (task["message"] or "").startswith(core_tasks.WAITING_FOR_SERVER):
                task = await wait_event(client, "task.progress", lambda d: d["callId"] == "w1")
            assert task["message"].startswith(core_tasks.WAITING_FOR_SERVER)
            await relay.open(tg)  # the server is back: the next try reaches it
            asked = await until_asked(client, client, "w1")
            answer = {"elicitationId": asked["elicitationId"], "action": "accept"}
            await client.call("elicitations.respond", {**answer, "content": {"answer": "late"}})
            await wait_event(client, "call.finished", lambda d: d["callId"] == "w1")
            kept = await client.call("calls.result", {"callId": "w1"})
            assert text_of(kept["result"]) == "answer: late"
        relay.close()


async def test_a_task_whose_server_went_away_meanwhile_ends_with_why(
    short_tmp: Path, http_tasks: tuple[str, Recorded]
) -> None:
    url, record = http_tasks
    for call_id, now, why in (
        ("g1", {}, "was removed or disabled while meworkd was stopped"),
        ("g2", {"work": {"type": "http", "url": url + "?v=2"}}, "was given another URL"),
    ):
        root = short_tmp / call_id
        await start_asking(root, {"work": {"type": "http", "url": url}}, call_id)
        task_id = record.task_ids()[-1]
        write_settings(root / "settings.json", now)
        async with start_daemon(root) as running, connect(running.socket) as client:
            task = await client.call("tasks.get", {"callId": call_id})
            assert task["status"] == "failed"
            assert why in task["message"]
            kept = await client.call("calls.result", {"callId": call_id})
            assert why in text_of(kept["result"])
        assert record.of("tasks/get", task_id)  # (it was followed before)


async def test_a_stdio_servers_task_ends_with_its_process(short_tmp: Path) -> None:
    # Over stdio the server speaks 2026-07-28 only behind the wrapper (meworkd asks
    # initialize first, and a handshake-era session never gets a task).
    entry = {"type": "stdio", "command": PY, "args": [MODERN_ONLY, "--server", TASKS_SERVER]}
    async with (
        start_daemon(short_tmp, {"local": entry}) as running,
        connect(running.socket) as client,
    ):
        await client.call("events.subscribe", {"topics": ["elicitation.requested"]})
        turn = await begin_turn(client, ["local"])
        name = bound(turn, "local", "ask")
        conversation = turn["conversationId"]
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                params = {"turnId": turn["turnId"], "name": name, "callId": "s1"}
                with pytest.raises((RpcError, ConnectionError)):
                    await client.call("turns.callTool", {**params, "arguments": {"message": "?"}})

            tg.start_soon(ask)
            await until_asked(client, client, "s1")
            assert (await client.call("tasks.get", {"callId": "s1"}))["resumable"] is False
            running.daemon.request_shutdown()
    async with start_daemon(short_tmp) as running, connect(running.socket) as client:
        task = await client.call("tasks.get", {"callId": "s1"})
        assert task["status"] == "failed"
        assert task["message"] == "its server's process ended when meworkd stopped"
        kept = await client.call("calls.result", {"callId": "s1"})
        assert "ended when meworkd stopped" in text_of(kept["result"])
        audit = await client.call("audit.list", {"conversationId": conversation})
        calls = [e for e in audit["entries"] if not is_question(e)]
        assert [(e["decision"], e["reason"]) for e in calls] == [
            ("allow", "meworkd stopped during the call")
        ]


@pytest.mark.skipif(not EVERYTHING.exists(), reason="the npm peers are installed by scripts/test")
async def test_a_2025_11_25_task_of_server_everything(short_tmp: Path) -> None:
    entry = {"type": "stdio", "command": "node", "args": [str(EVERYTHING), "stdio"]}
    async with (
        start_daemon(short_tmp, {"everything": entry}) as running,
        connect(running.socket) as client,
    ):
        await client.call("events.subscribe", {"topics": ["elicitation.requested", *TASK_TOPICS]})
        turn = await begin_turn(client, ["everything"])
        name = bound(turn, "everything", "simulate-research-query")
        params = {"turnId": turn["turnId"], "name": name, "callId": "x1"}
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                replies: list[dict[str, Any]] = []

                async def research() -> None:
                    arguments = {"topic": "tides", "ambiguous": True}
                    replies.append(
                        await client.call("turns.callTool", {**params, "arguments": arguments})
                    )

                tg.start_soon(research)
                asked = await until_asked(client, client, "x1")
                choice = asked["requestedSchema"]["properties"]["interpretation"]["oneOf"][0]
                answer = {"elicitationId": asked["elicitationId"], "action": "accept"}
                content = {"interpretation": choice["const"]}
                await client.call("elicitations.respond", {**answer, "content": content})
        assert replies[0]["isError"] is False
        assert "Research Report: tides" in text_of(replies[0])
        assert choice["const"] in text_of(replies[0])
        task = await client.call("tasks.get", {"callId": "x1"})
        assert (task["status"], task["resumable"]) == ("completed", False)


# --- pure parts ---------------------------------------------------------------------------


def test_task_answers_are_read_and_their_poll_interval_bounded() -> None:
    base = {"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x"}
    modern = ticket_of(
        {**base, "resultType": "task", "pollIntervalMs": 0, "ttlMs": 5}, legacy=False
    )
    assert modern is not None
    assert (modern.poll_seconds, modern.ttl_ms, modern.legacy) == (MIN_POLL_SECONDS, 5, False)
    slow = ticket_of({**base, "resultType": "task", "pollIntervalMs": 10**9}, legacy=False)
    assert slow is not None
    assert slow.poll_seconds == MAX_POLL_SECONDS
    legacy = ticket_of({"task": {**base, "pollInterval": 500, "ttl": None}}, legacy=True)
    assert legacy is not None
    assert (legacy.poll_seconds, legacy.legacy) == (0.5, True)
    assert ticket_of({"content": [], "isError": False}, legacy=False) is None
    for hostile in (
        {"resultType": "task"},
        {**base, "resultType": "task", "status": "sleeping"},
        {**base, "resultType": "task", "taskId": ""},
        {**base, "resultType": "task", "taskId": "x" * 600},
        {**base, "resultType": "task", "statusMessage": 7},
    ):
        with pytest.raises(Exception, match="not a task"):
            ticket_of(hostile, legacy=False)
    with pytest.raises(Exception, match="not a task"):
        ticket_of({"task": "nope"}, legacy=True)


def test_task_only_tools_are_offered_on_stdio_and_left_out_over_http() -> None:
    remote = {"type": "http", "url": "http://127.0.0.1:1/mcp"}
    settings = parse_settings(
        {"assets": {"mcpServers": {"local": {"command": "x"}, "remote": remote}}}
    )
    tool = ToolInfo("research", None, None, {"type": "object"}, None, None, needs_tasks=True)
    catalog = bind(["local", "remote"], {"local": [tool], "remote": [tool]}, settings)
    assert [(b.server, b.as_task) for b in catalog.bindings.values()] == [("local", True)]


def test_task_max_seconds_is_checked() -> None:
    assert parse_mcp_options({"task_max_seconds": 60}).task_max_seconds == 60
    for bad in (0, -1, 10**9, "soon"):
        with pytest.raises(InvalidSettings, match="task_max_seconds"):
            parse_mcp_options({"task_max_seconds": bad})
