"""One pasted entry, in any host's spelling, as a meworkd entry plus what was not used.

Each host names the same facts differently (Zed's ``command`` object, Goose's ``cmd``/``envs``,
Windsurf's ``serverUrl``, Gemini CLI's ``httpUrl``, Cline's and Roo's ``disabled`` and
``timeout`` in seconds, ...). What maps onto a meworkd field is translated; everything else is
left out of the stored entry and reported as a warning naming the field, never dropped silently.
"""

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from meworkd.settings.model import ServerConfig

__all__ = ["OWN_FIELDS", "Rejected", "Translated", "translate"]

# The fields of a meworkd entry, as the file spells them: one definition, the entry's own type.
OWN_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(ServerConfig))
# Goose's extension types that are not MCP servers meworkd could run.
_GOOSE_BUILTIN = frozenset({"builtin", "platform", "frontend", "inline_python"})
# Keys only Cline / Roo write: their "timeout" is in seconds.
_CLINE_KEYS = frozenset({"autoApprove", "alwaysAllow", "disabled", "watchPaths", "disabledTools"})
# Keys only Gemini CLI writes: its "timeout" is in milliseconds and its "url" is HTTP+SSE.
GEMINI_KEYS = frozenset({"httpUrl", "trust", "includeTools", "excludeTools"})
_APPROVALS = (
    "not imported: trusting every tool of a server is not carried over; list the tools that "
    'may run without asking in alwaysAllowTools (names or globs, e.g. ["*"]), or answer an '
    'approval with "always"'
)


class Rejected(Exception):
    """The entry cannot become a meworkd server; the message says why."""


@dataclass(slots=True)
class Translated:
    entry: dict[str, Any] = field(default_factory=dict)
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (field, message)

    def warn(self, key: str, message: str) -> None:
        self.warnings.append((key, message))


def translate(raw: dict[str, Any], *, dialect: str) -> Translated:
    """``raw`` (one server of a document in ``dialect``) as a meworkd entry; raise
    :class:`Rejected` when it describes something meworkd cannot run."""
    rest = dict(raw)
    out = Translated()
    for step in _STEPS:
        step(rest, out, dialect)
    for key, value in rest.items():
        if key in OWN_FIELDS:
            out.entry[key] = value
        else:
            out.warn(key, "not used by meworkd; not imported")
    _check_transport(out)
    # In the order of the pasted entry, as a person reads it.
    position = {key: index for index, key in enumerate(raw)}
    out.warnings.sort(key=lambda w: position.get(w[0].split(".")[0], len(position)))
    return out


def _zed_command(rest: dict[str, Any], out: Translated, _dialect: str) -> None:
    # Zed: "command": {"path", "args", "env"} (the flat shape needs nothing done).
    command = rest.get("command")
    if not isinstance(command, dict):
        return
    del rest["command"]
    for key, target in (("path", "command"), ("args", "args"), ("env", "env")):
        if key in command:
            rest.setdefault(target, command[key])
    for key in command.keys() - {"path", "args", "env"}:
        out.warn(f"command.{key}", "not used by meworkd; not imported")


def _goose(rest: dict[str, Any], out: Translated, dialect: str) -> None:
    if dialect != "goose":
        return
    kind = rest.get("type")
    if kind in _GOOSE_BUILTIN:
        raise Rejected(f"a Goose {kind} extension is part of Goose, not an MCP server to run")
    for old, new in (("cmd", "command"), ("envs", "env"), ("uri", "url")):
        if old in rest:
            rest.setdefault(new, rest.pop(old))
    if "env_keys" in rest:
        out.warn(
            "env_keys",
            "not imported: Goose keeps these values in its keyring; add them under env "
            "(or as ${VAR} references to meworkd's environment)",
        )
        del rest["env_keys"]


def _urls(rest: dict[str, Any], out: Translated, dialect: str) -> None:
    if "serverUrl" in rest:  # Windsurf
        rest.setdefault("url", rest.pop("serverUrl"))
    if dialect == "gemini" and "url" in rest and "httpUrl" not in rest:
        raise Rejected(
            "url: Gemini CLI reads url as the old HTTP+SSE transport, which meworkd does not "
            "support; give the server's Streamable HTTP endpoint (often ending in /mcp) as httpUrl"
        )
    if "httpUrl" in rest:  # Gemini CLI: Streamable HTTP
        if "url" in rest:
            out.warn("url", "not imported: httpUrl (Streamable HTTP) is used instead")
        rest["url"] = rest.pop("httpUrl")
        rest.setdefault("type", "streamable_http")


def _disabled(rest: dict[str, Any], out: Translated, _dialect: str) -> None:
    if "disabled" not in rest:
        return
    disabled = rest.pop("disabled")
    if not isinstance(disabled, bool):
        out.warn("disabled", "not imported: expected true or false")
    elif "enabled" not in rest:
        rest["enabled"] = not disabled


def _timeout(rest: dict[str, Any], out: Translated, dialect: str) -> None:
    if "timeout" not in rest:
        return
    value = rest.pop("timeout")
    if "timeoutSeconds" in rest:
        out.warn("timeout", "not imported: timeoutSeconds is used instead")
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        out.warn("timeout", "not imported: expected a number > 0")
        return
    seconds_hint = dialect in ("goose", "cline") or bool(_CLINE_KEYS & rest.keys())
    in_ms = dialect == "gemini" or (not seconds_hint and value >= 1000)
    if in_ms:
        # Claude Code and Gemini CLI write milliseconds; Claude Code ignores values < 1000.
        rest["timeoutSeconds"] = max(1, math.ceil(value / 1000))
        out.warn(
            "timeout",
            f"read as milliseconds (Claude Code, Gemini CLI): timeoutSeconds "
            f"{rest['timeoutSeconds']}",
        )
    else:
        rest["timeoutSeconds"] = math.ceil(value)


def _tool_lists(rest: dict[str, Any], out: Translated, _dialect: str) -> None:
    for key in ("autoApprove", "alwaysAllow"):  # Cline, Roo Code: tools run without asking
        if key in rest:
            _allow_list(rest, out, key, rest.pop(key))
    if "trust" in rest:  # Gemini CLI: every tool of the server; not carried over wholesale
        rest.pop("trust")
        out.warn("trust", _APPROVALS)
    if "excludeTools" in rest:  # Gemini CLI: the same as disabledTools
        excluded = rest.pop("excludeTools")
        if isinstance(excluded, list):
            current = rest.get("disabledTools")
            merged = list(current) if isinstance(current, list) else []
            rest["disabledTools"] = merged + [t for t in excluded if t not in merged]
        else:
            out.warn("excludeTools", "not imported: expected a list of tool names")
    if "includeTools" in rest:
        rest.pop("includeTools")
        out.warn(
            "includeTools",
            "not imported: meworkd lists the tools to switch off (disabledTools); after a "
            "Test connection, disable the tools you do not want with servers.setToolEnabled",
        )


def _allow_list(rest: dict[str, Any], out: Translated, key: str, tools: object) -> None:
    """Another host's allow list as alwaysAllowTools, said in the preview (never silently)."""
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        out.warn(key, "not imported: expected a list of tool names")
        return
    if not tools:
        return  # an empty list allows nothing: nothing to carry over or to say
    current = rest.get("alwaysAllowTools")
    merged = list(current) if isinstance(current, list) else []
    rest["alwaysAllowTools"] = merged + [t for t in tools if t not in merged]
    out.warn(key, f"imported as alwaysAllowTools: {', '.join(tools)} run without asking")


_STEPS: tuple[Callable[[dict[str, Any], Translated, str], None], ...] = (
    _zed_command,
    _goose,
    _urls,
    _disabled,
    _timeout,
    _tool_lists,
)


def _check_transport(out: Translated) -> None:
    url = out.entry.get("url")
    if isinstance(url, str) and url.split("?")[0].rstrip("/").endswith("/sse"):
        out.warn(
            "url",
            "the address ends in /sse, the usual endpoint of the old HTTP+SSE transport, "
            "which meworkd does not speak; if connecting fails, use the server's Streamable "
            "HTTP endpoint (often the same address ending in /mcp)",
        )
    if url is not None and "envFile" in out.entry:
        out.warn("envFile", "kept, but read for stdio servers only: this one has a url")
    _vscode_variables(out)


# VS Code's predefined variables (code.visualstudio.com/docs/reference/variables-reference):
# meworkd would read each as an environment variable that is not set, and the server would
# fail when it starts. What to write instead, by variable.
_NO_OPEN_FILE = "no equivalent: meworkd has no open editor or file; write the value itself"
_VSCODE_INSTEAD = {
    "userHome": "write ${HOME} (meworkd's environment) or the path itself",
    "workspaceFolder": "meworkd has no workspace; write the folder's path",
    "workspaceFolderBasename": "meworkd has no workspace; write the folder's name",
    "cwd": "write the folder's path (the entry's cwd sets where the server starts)",
    "pathSeparator": "write /",
    "/": "write /",
    "execPath": "no equivalent: write the program's path",
    "defaultBuildTask": _NO_OPEN_FILE,
    "lineNumber": _NO_OPEN_FILE,
    "columnNumber": _NO_OPEN_FILE,
    "selectedText": _NO_OPEN_FILE,
}
_VSCODE_VARIABLE = re.compile(r"\$\{(config:|command:)?([A-Za-z/]+)(?::[^}]*)?\}")


def _vscode_variables(out: Translated) -> None:
    """Warn, by field, about every VS Code variable in a field meworkd expands."""
    for key, text in _expanded_strings(out.entry):
        for match in _VSCODE_VARIABLE.finditer(text):
            prefix, name = match[1], match[2]
            instead = _VSCODE_INSTEAD.get(name)
            if prefix:
                instead = "no equivalent in meworkd: write the value itself"
            elif instead is None and name.startswith(("file", "relativeFile")):
                instead = _NO_OPEN_FILE
            if instead is not None:
                out.warn(key, f"{match[0]} is VS Code's, and unset for meworkd: {instead}")


def _expanded_strings(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, text) of each string meworkd expands ``${VAR}`` in, in the entry's order."""
    found: list[tuple[str, str]] = []
    for key in ("command", "args", "env", "envFile", "cwd", "url", "headers"):
        value = entry.get(key)
        if isinstance(value, str):
            found.append((key, value))
        elif isinstance(value, list):
            found += [(key, item) for item in value if isinstance(item, str)]
        elif isinstance(value, dict):
            found += [(f"{key}.{k}", v) for k, v in value.items() if isinstance(v, str)]
    return found
