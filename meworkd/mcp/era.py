"""Which protocol era a server speaks, learned while a session connects.

MCP 2026-07-28 has no handshake: a server of that era may refuse ``initialize`` (the official
conformance suite's mock answers it with HTTP 400). The spec's era detection is followed per
transport (basic/versioning, "Era detection"):

* Streamable HTTP: ``server/discover`` first. A discover result naming a 2026-07-28 era version
  is adopted; any other answer (an HTTP 400 or 404 with an unrecognised body, a result that is
  not a discover result, one listing handshake-era versions only) means a handshake-era server,
  and ``initialize`` follows on the same connection. An HTTP 401 is met the same way: a server
  may let ``initialize`` through without a login and want one for the rest; if ``initialize`` is
  refused too, whatever the reason, the connect fails as a login needed (a 2026-07-28 server
  that wants a login refuses ``initialize`` for its era). Only ``-32022`` naming versions of
  the 2026-07-28 era alone, none of which meworkd speaks, fails the connect at once. A legacy
  verdict is remembered per URL (:class:`EraMemory`, as the spec allows), so later sessions to
  that server go straight to ``initialize`` and pay for no probe; if that ``initialize`` fails
  (other than with HTTP 401, which says nothing of the era), the server is probed again.
* stdio: ``initialize`` first (nearly every stdio server is of the handshake era, and some do
  not answer anything before it); a server that refuses it with a JSON-RPC error is then
  discovered.
"""

from collections import OrderedDict

import mcp_types as types
from mcp import ClientSession, MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from meworkd.mcp.http import HttpErrors

__all__ = ["EraMemory", "discover_first", "initialize_first"]

ERA_MEMORY_SIZE = 256  # URLs remembered as handshake-era; the least recently used go first


class EraMemory:
    """The URLs whose server answered in the handshake era after a failed probe (one daemon)."""

    def __init__(self, size: int = ERA_MEMORY_SIZE) -> None:
        self._legacy: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def is_legacy(self, url: str) -> bool:
        if url not in self._legacy:
            return False
        self._legacy.move_to_end(url)
        return True

    def remember_legacy(self, url: str) -> None:
        self._legacy[url] = None
        self._legacy.move_to_end(url)
        while len(self._legacy) > self._size:
            self._legacy.popitem(last=False)

    def forget(self, url: str) -> None:
        self._legacy.pop(url, None)


async def initialize_first(client: ClientSession) -> None:
    """stdio: the handshake; a server refusing it with a JSON-RPC error is discovered instead
    (whatever the code: -32601, -32022, ... ). A closed pipe or a timeout is no refusal."""
    try:
        await client.initialize()
    except MCPError as exc:
        if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            raise
        await client.discover()


async def discover_first(
    client: ClientSession, url: str, http: HttpErrors, memory: EraMemory | None
) -> None:
    """Streamable HTTP: the era as the module says; the session is ready to use on return.

    Raises:
        MCPError: the server refused both eras (HTTP 401: it needs a login), or speaks no
            version we do.
    """
    if memory is not None and memory.is_legacy(url):
        try:
            await client.initialize()
            return
        except (MCPError, RuntimeError):  # RuntimeError: it answered with a version of 2026
            if http.unauthorized:  # a missing login says nothing of the era
                raise
            memory.forget(url)  # the server may have moved on: probe it
    if await _probe(client, http):
        return
    wants_login = http.unauthorized  # a 401 to the probe says nothing of the era
    http.last = None  # the probe's refusal was an answer, not a failure to report
    try:
        await client.initialize()
    except MCPError:
        if wants_login:  # refused without a login too: what it needs is the login
            http.last = (401, "")
        raise
    if memory is not None:
        memory.remember_legacy(url)


async def _probe(client: ClientSession, http: HttpErrors) -> bool:
    """``server/discover`` at the newest version we speak (once more at the newest we share,
    after a -32022 naming one): True when a 2026-07-28 era result was adopted, False when the
    answer says the server is of the handshake era."""
    version = LATEST_MODERN_VERSION
    for attempt in range(2):
        try:
            raw = await client.send_discover(version)
        except MCPError as exc:
            supported = _supported(exc)
            shared = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
            if shared and attempt == 0:
                version = shared[-1]
                continue
            if supported and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
                raise  # 2026-07-28 era only, and no version in common
            return False
        try:
            result = types.DiscoverResult.model_validate(raw)
        except ValidationError:
            return False  # not a discover result: no evidence of the 2026-07-28 era
        if not any(v in result.supported_versions for v in MODERN_PROTOCOL_VERSIONS):
            return False  # it answers discover but lists handshake-era versions only
        client.adopt(result)
        return True
    return False


def _supported(exc: MCPError) -> list[str]:
    """The versions a -32022 (unsupported protocol version) names; empty for anything else."""
    if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
        return []
    try:
        return types.UnsupportedProtocolVersionErrorData.model_validate(exc.error.data).supported
    except ValidationError:
        return []
