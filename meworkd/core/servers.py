"""Servers: the configured MCP servers as people manage them, and what follows from each change.

One place decides what a server's view holds (its entry, sessions, login, last failure and the
settings' verdict), what an edit writes, and what goes with a server when it is removed or
renamed: its OAuth login, log ring, inventory and the conversations that select it. Its
detail page asks the server itself (Test connection, inspection on a short-lived session of
its own, never a conversation's) and shows what it logged and last reported; whatever the
server sent is redacted before it is returned or recorded.
"""

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from meworkd.base.errors import ServerNotFound
from meworkd.core.health import settings_state
from meworkd.core.inspect import SECTIONS, Inventory, inspect
from meworkd.core.probe import test_connection
from meworkd.core.replies import Redact
from meworkd.core.servercost import server_cost
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.state import StateDB
from meworkd.mcp import (
    AuthRegistry,
    InspectionRequest,
    SessionPool,
    complete,
    get_prompt,
    list_prompts,
    list_resources,
    read_resource,
)
from meworkd.settings import ServerConfig, edits, mask_value, masked_entry
from meworkd.settings.dialects import parse_import, resolve_rules
from meworkd.settings.edits import OnConflict
from meworkd.settings.entry_text import entry_from_text
from meworkd.settings.lookup import command_warnings
from meworkd.settings.store import SettingsStore
from meworkd.settings.toolrules import unmatched

__all__ = ["Servers"]

T = TypeVar("T")


class Servers:
    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        auth: AuthRegistry,
        logs: ServerLogs,
        inventory: Inventory,
        state: StateDB,
        redact: Redact,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._environ = os.environ if environ is None else environ  # where commands are found
        self._store = store
        self._pool = pool
        self._auth = auth
        self._logs = logs
        self._inventory = inventory
        self._state = state
        self._redact = redact

    # --- views ---------------------------------------------------------------------------

    def config(self, name: str) -> ServerConfig:
        """``name``'s valid entry of now.

        Raises:
            ServerNotFound: the settings have no valid entry of that name.
        """
        if (config := self._store.settings.servers.get(name)) is None:
            raise ServerNotFound(name)
        return config

    def known(self, name: str) -> None:
        """Raise :class:`ServerNotFound` unless the settings name ``name`` (valid or not)."""
        settings = self._store.settings
        if name not in settings.servers and name not in settings.server_errors:
            raise ServerNotFound(name)

    def describe(self, name: str) -> dict[str, Any]:
        """One server as servers.list shows it (an entry the settings refused shows as invalid)."""
        settings = self._store.settings
        config = settings.servers.get(name)
        error = settings.server_errors.get(name)
        if config is None and error is None:
            raise ServerNotFound(name)
        out: dict[str, Any] = {"name": name}
        if config is None:
            out.update(type=None, enabled=False, status="invalid")
        else:
            out.update(self._configured(name, config))
            if (auth := self._auth.status(name, config)) is not None:
                out["auth"] = auth  # OAuth state, scopes, expiry; never a token
        # Its latest failure to connect or list (any conversation) until it connects again.
        out["lastError"] = self._redact(self._pool.status.last_error(name))
        if error is not None:
            out["error"] = error
        return out

    def _configured(self, name: str, config: ServerConfig) -> dict[str, Any]:
        sessions = self._pool.count_for(name)
        return {
            "type": config.type,
            "enabled": config.enabled,
            "status": "disabled" if not config.enabled else "connected" if sessions else "enabled",
            "sessions": sessions,
            "description": config.description,
            "command": config.command,
            "args": list(config.args),
            "url": None if config.url is None else mask_value("url", "url", config.url),
            "timeoutSeconds": config.timeout,
            "longRunning": config.long_running,
            "disabledTools": list(config.disabled_tools),
            "alwaysAllowTools": list(config.always_allow_tools),
            "disabledAutoApproveTools": list(config.disabled_auto_approve_tools),
            "serverInfo": msgspec.to_builtins(config.server_info) if config.server_info else None,
            "cost": self._cost(name, config),
        }

    def _cost(self, name: str, config: ServerConfig) -> dict[str, Any] | None:
        """What its tools would cost a turn, from the last tools it reported (None: not yet)."""
        last = self._inventory.get(name)
        prefix = self._store.settings.mcp.mandatory_description_prefix
        return server_cost(name, config, last["tools"], last["reported"].get("tools"), prefix)

    def listing(self) -> dict[str, Any]:
        """Every server the settings name, valid ones first, and the settings file's state."""
        settings = self._store.settings
        names = list(settings.servers) + [
            n for n in settings.server_errors if n not in settings.servers
        ]
        servers = [self.describe(n) for n in names]
        return {"servers": servers, "settings": settings_state(self._store)}

    def get(self, name: str, *, reveal: bool) -> dict[str, Any]:
        """One server's view with its entry as written (secrets masked unless ``reveal``)."""
        out = self.describe(name)
        out["settings"] = settings_state(self._store)
        raw = edits.servers_of(self._store.document()).get(name)
        if isinstance(raw, dict):
            out["server"] = raw if reveal else masked_entry(raw)
        if (config := self._store.settings.servers.get(name)) is not None:
            out["warnings"] = self._rule_warnings(config, self._inventory.get(name)["tools"])
        return out

    @staticmethod
    def _rule_warnings(config: ServerConfig, tools: list[dict[str, Any]] | None) -> list[str]:
        """Tool rules that match none of the tools the server last reported (a typo, or a
        tool it dropped): a warning, not an error, since the server may add it again."""
        if tools is None:
            return []  # not reported yet: nothing to hold the rules against
        names = [str(tool.get("name")) for tool in tools]
        return [
            f"{key}: {pattern!r} matches none of the tools the server reported"
            for key, patterns in (
                ("disabledTools", config.disabled_tools),
                ("alwaysAllowTools", config.always_allow_tools),
            )
            for pattern in unmatched(patterns, names)
        ]

    def export(self, *, reveal: bool) -> dict[str, Any]:
        """Every entry as written, as an ``mcpServers`` document."""
        servers = edits.servers_of(self._store.document())
        if not reveal:
            servers = {n: masked_entry(e) if isinstance(e, dict) else e for n, e in servers.items()}
        return {"mcpServers": servers}

    # --- edits ---------------------------------------------------------------------------

    async def add(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        await self._store.mutate(lambda doc: edits.add_server(doc, name, entry))
        out = self.describe(name)
        # Said now, not when a conversation first uses it: a command meworkd will not find.
        if (config := self._store.settings.servers.get(name)) is not None:
            out["warnings"] = command_warnings(config, self._environ)
        return out

    async def update(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        await self._store.mutate(lambda doc: edits.update_server(doc, name, patch))
        return self.describe(name)

    async def replace(self, name: str, text: str) -> dict[str, Any]:
        """Replace ``name``'s entry with one written by hand as JSONC ``text``."""
        entry = entry_from_text(text)
        stored = await self._store.mutate(lambda doc: edits.replace_server(doc, name, entry))
        return {**self.describe(name), "server": masked_entry(stored)}

    async def remove(self, name: str) -> dict[str, Any]:
        """Remove ``name`` and everything kept of it; conversations stop selecting it."""
        config = self._store.settings.servers.get(name)
        await self._store.mutate(lambda doc: edits.remove_server(doc, name))
        if config is not None:  # its stored OAuth login and registration go too (issue 16)
            await self._auth.forget(name, config, self._store.settings.servers)
        self._logs.forget(name)
        self._inventory.forget(name)
        touched = self._state.replace_server_in_selections(name, None)
        return {"removed": name, "conversationsUpdated": touched}

    async def rename(self, name: str, new_name: str) -> dict[str, Any]:
        """Rename ``name``; its logs, inventory and the selections naming it follow."""
        await self._store.mutate(lambda doc: edits.rename_server(doc, name, new_name))
        self._logs.rename(name, new_name)
        self._inventory.rename(name, new_name)
        touched = self._state.replace_server_in_selections(name, new_name)
        return {**self.describe(new_name), "conversationsUpdated": touched}

    async def import_(
        self, text: str, inputs: dict[str, str] | None, on_conflict: OnConflict, *, dry_run: bool
    ) -> dict[str, Any]:
        """Add a pasted document's servers; a dry run says what would happen, writes nothing."""
        parsed = parse_import(text, inputs)

        def apply(doc: dict[str, Any]) -> dict[str, list[Any]]:
            report = edits.import_servers(doc, parsed.entries, on_conflict)
            # Claude Code's permission rules, for the servers of the document and those
            # registered already (after the import: an entry it replaced takes them too).
            servers = edits.servers_of(doc)
            names = [name for name, entry in servers.items() if isinstance(entry, dict)]
            rules, unresolved = resolve_rules(parsed.permissions, names)
            report["rules"] = edits.add_tool_rules(doc, rules)
            report["ruleWarnings"] = unresolved
            return report

        # A dry run applies the import to a copy of the document.
        report = apply(self._store.document()) if dry_run else await self._store.mutate(apply)
        report["rejected"] = parsed.rejected + report["rejected"]
        rejected = {r["name"] for r in report["rejected"]}
        warnings = [w for w in parsed.warnings if w["name"] not in rejected]
        warnings += report.pop("ruleWarnings")
        return {
            "format": parsed.format,
            "dryRun": dry_run,
            "duplicates": parsed.duplicates,
            **report,
            "warnings": warnings,
            "needsInputs": parsed.needs_inputs,
        }

    async def set_tool_enabled(self, name: str, tool: str, *, enabled: bool) -> dict[str, Any]:
        disabled = await self._store.mutate(
            lambda doc: edits.set_tool_flag(doc, name, tool, key="disabledTools", on=not enabled)
        )
        return {"name": name, "tool": tool, "enabled": enabled, "disabledTools": disabled}

    async def set_tool_auto_approve(
        self, name: str, tool: str, *, auto_approve: bool
    ) -> dict[str, Any]:
        disabled = await self._store.mutate(
            lambda doc: edits.set_tool_flag(
                doc, name, tool, key="disabledAutoApproveTools", on=not auto_approve
            )
        )
        return {
            "name": name,
            "tool": tool,
            "autoApprove": auto_approve,
            "disabledAutoApproveTools": disabled,
        }

    # --- sessions and login --------------------------------------------------------------

    def close_sessions(self, name: str) -> dict[str, Any]:
        """Retire ``name``'s sessions: a call in flight finishes, the next use dials afresh."""
        self.describe(name)  # server_not_found for a name the settings do not know
        closed = self._pool.retire(lambda session: session.server == name)
        return {"name": name, "sessionsClosed": closed}

    async def login(self, name: str) -> dict[str, Any]:
        return await self._auth.login(name, self.config(name))

    async def logout(self, name: str) -> dict[str, Any]:
        revoked = await self._auth.logout(name, self.config(name))
        # Live sessions of the server hold no token of their own, but close them all the same:
        # the user asked to be logged out, and a server may tie its session to the login.
        self._pool.retire(lambda session: session.server == name, force=True)
        return {"revoked": revoked}

    # --- the detail page: asking the server, what it logged and reported ----------------

    async def test(self, name: str) -> dict[str, Any]:
        """Test connection: dial ``name`` once and report; a success records what it offers."""
        result = await test_connection(self._pool, name, self.config(name))
        # Server-sourced text may quote a secret: redacted for the reply and for the settings
        # file alike (the recorded serverInfo shows in servers.list).
        redacted: dict[str, Any] = self._redact(result)  # type: ignore[assignment]
        # The test is the server's latest word: lastError ends with a success, is a failure.
        self._pool.status.tested(name, None if redacted["ok"] else redacted)
        if redacted["ok"]:
            self._inventory.record(name, "test", {k: redacted[k] for k in SECTIONS})
            info = redacted["serverInfo"]
            await self._store.mutate(lambda doc: edits.record_server_info(doc, name, info))
        return redacted

    def logs(self, name: str, tail: int | None) -> dict[str, Any]:
        """The last ``tail`` lines ``name``'s sessions wrote (all kept when None)."""
        self.known(name)
        ring = self._logs.ring(name)
        lines = [
            {"time": datetime.fromtimestamp(t, UTC).isoformat(), "line": line}
            for t, line in ring.tail(tail)
        ]
        return {"name": name, "lines": lines, "dropped": ring.dropped}

    def tools(self, name: str) -> dict[str, Any]:
        """What ``name`` last reported, without connecting."""
        self.config(name)
        # A turn's discovery is recorded as the server sent it: redacted here, like a test.
        last: dict[str, Any] = self._redact(self._inventory.get(name))  # type: ignore[assignment]
        return {"name": name, **last}

    async def prompts(self, name: str) -> dict[str, Any]:
        result = await self._inspect(name, list_prompts)
        self._inventory.record(name, "inspection", {"prompts": result["prompts"]})
        return result

    async def resources(self, name: str) -> dict[str, Any]:
        result = await self._inspect(name, list_resources)
        sections = {k: result[k] for k in ("resources", "resourceTemplates")}
        self._inventory.record(name, "inspection", sections)
        return result

    async def get_prompt(self, name: str, prompt: str, arguments: dict[str, str]) -> dict[str, Any]:
        limit = self._store.settings.mcp.max_reply_bytes
        return await self._inspect(name, get_prompt(prompt, arguments, limit))

    async def read_resource(self, name: str, uri: str) -> dict[str, Any]:
        limit = self._store.settings.mcp.max_reply_bytes
        return {"uri": uri, **await self._inspect(name, read_resource(uri, limit))}

    async def complete(
        self,
        name: str,
        ref: dict[str, Any],
        argument: dict[str, Any],
        context_arguments: dict[str, str] | None,
    ) -> dict[str, Any]:
        request = complete(ref, argument, context_arguments)  # checks ref and argument first
        return await self._inspect(name, request)

    async def _inspect(self, name: str, request: InspectionRequest[T]) -> dict[str, Any]:
        result = await inspect(self._pool, name, self.config(name), request)
        redacted: dict[str, Any] = self._redact(result)  # type: ignore[assignment]
        return {"name": name, **redacted}
