"""An MCP bundle's ``manifest.json`` checked, and its ``mcp_config`` made into an entry.

A bundle (``.mcpb``, formerly DXT) is a zip with a manifest (github.com/modelcontextprotocol/
mcpb, MANIFEST.md, schemas 0.3 and 0.4). Checked: a supported ``manifest_version`` (or the
legacy ``dxt_version``), the required fields, ``compatibility.platforms`` against this system
and the runtimes it names against meworkd's PATH. ``mcp_config`` (with this platform's
``platform_overrides``) becomes the entry: ``${__dirname}`` is the unpacked folder,
``${HOME}``, ``${DESKTOP}``, ``${DOCUMENTS}``, ``${DOWNLOADS}``, ``${pathSeparator}`` and
``${/}`` as documented, ``${user_config.KEY}`` the user's value (or the manifest's default).
Any other ``${...}`` is refused: meworkd would expand it from its own environment.
"""

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from meworkd.base.errors import InvalidParams, UnusableServerJson
from meworkd.settings.dialects.registry_inputs import check_secret, kept_as_secret

__all__ = ["MANIFEST_VERSIONS", "Bundle", "read_manifest"]

MANIFEST_VERSIONS = ("0.1", "0.2", "0.3", "0.4")
_SERVER_TYPES = {"node": "0.1", "python": "0.1", "binary": "0.1", "uv": "0.4"}
_RUNTIME_COMMANDS = {"node": "node", "python": "python3"}
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_USER_TYPES = ("string", "number", "boolean", "directory", "file")


def _fail(message: str) -> UnusableServerJson:
    return UnusableServerJson(f"manifest.json: {message}")


@dataclass(slots=True)
class Bundle:
    """A checked manifest: who it is, and what it asks of the user."""

    manifest: dict[str, Any]
    name: str
    version: str
    inputs: list[dict[str, Any]] = field(default_factory=list)

    def plan(
        self, folder: str, supplied: Mapping[str, str], environ: Mapping[str, str]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The entry the bundle unpacked at ``folder`` runs as, and the inputs still needed."""
        home = environ.get("HOME", "")
        values, missing = self._values(supplied, _home_paths(home))
        needs = [i for i in self.inputs if i["id"] in missing]
        config = _platform_config(self.manifest["server"]["mcp_config"])
        filler = _Filler(self, folder, values, supplied, home)
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise _fail("server.mcp_config.command: missing")
        entry: dict[str, Any] = {"type": "stdio", "command": filler.fill(command, "command")}
        args = config.get("args") or []
        env = config.get("env") or {}
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _fail("server.mcp_config.args: expected a list of strings")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise _fail("server.mcp_config.env: expected an object of strings")
        entry["args"] = [filler.fill(a, f"args[{i}]") for i, a in enumerate(args)]
        if env:
            entry["env"] = {k: filler.fill(v, f"env.{k}") for k, v in env.items()}
        description = self.manifest.get("description")
        if isinstance(description, str):
            entry["description"] = description[:300]
        return entry, needs

    def _values(
        self, supplied: Mapping[str, str], paths: Mapping[str, str]
    ) -> tuple[dict[str, str], list[str]]:
        values: dict[str, str] = {}
        missing: list[str] = []
        for spec in self.inputs:
            key = spec["id"]
            # A default may use ${HOME}, ${DESKTOP} and ${DOCUMENTS} (MANIFEST.md); with any
            # other variable it is no usable default and the value is asked for.
            default = spec["default"]
            if default is not None:
                default = _VARIABLE.sub(lambda m: paths.get(m[1], m[0]), default)
            if key in supplied:
                values[key] = _checked(key, spec, supplied[key])
            elif default is not None and not _VARIABLE.search(default):
                values[key] = default
            elif spec["required"]:
                missing.append(key)
        return values, missing


class _Filler:
    """Substitution of the documented variables in one bundle's ``mcp_config`` strings."""

    def __init__(
        self,
        bundle: Bundle,
        folder: str,
        values: Mapping[str, str],
        supplied: Mapping[str, str],
        home: str,
    ) -> None:
        self._declared = bundle.manifest.get("user_config") or {}
        self._sensitive = {i["id"] for i in bundle.inputs if i["secret"]}
        self._values = values
        self._supplied = supplied
        self._fixed = {"__dirname": folder, **_home_paths(home), "pathSeparator": "/", "/": "/"}

    def fill(self, text: str, where: str) -> str:
        return _VARIABLE.sub(lambda match: self._one(match, where), text)

    def _one(self, match: re.Match[str], where: str) -> str:
        name = match[1]
        if name in self._fixed:
            return self._fixed[name]
        if not name.startswith("user_config."):
            raise _fail(f"{where} uses {match[0]}, which is no bundle variable")
        key = name.removeprefix("user_config.")
        if key not in self._declared:
            raise _fail(f"{where} uses {match[0]}, which user_config does not declare")
        given = self._supplied.get(key)
        if key in self._sensitive and given is not None:
            # Masked and redacted only as a secret-named env value; elsewhere a reference.
            env_name = where.removeprefix("env.") if where.startswith("env.") else None
            if env_name is None or not kept_as_secret("env", env_name):
                check_secret(key, given, "argument")
        return self._values.get(key, "")


def _home_paths(home: str) -> dict[str, str]:
    return {
        "HOME": home,
        "DESKTOP": f"{home}/Desktop",
        "DOCUMENTS": f"{home}/Documents",
        "DOWNLOADS": f"{home}/Downloads",
    }


def _checked(key: str, spec: Mapping[str, Any], value: str) -> str:
    if value.startswith("${"):
        return value  # a reference to meworkd's environment: checked when it is expanded
    kind = spec["format"]
    if kind == "boolean" and value not in ("true", "false"):
        raise InvalidParams(f"inputs.{key}: expected true or false", input=key)
    if kind == "number":
        try:
            number = float(value)
        except ValueError:
            raise InvalidParams(f"inputs.{key}: expected a number", input=key) from None
        low, high = spec.get("min"), spec.get("max")
        if (low is not None and number < low) or (high is not None and number > high):
            raise InvalidParams(f"inputs.{key}: expected {low} to {high}", input=key)
    return value


def _platform_config(config: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k != "platform_overrides"}
    overrides = config.get("platform_overrides")
    mine = overrides.get(sys.platform) if isinstance(overrides, dict) else None
    if isinstance(mine, dict):
        out.update(mine)  # the reference code replaces each given key wholesale
    return out


def read_manifest(doc: object, found: Callable[[str], bool]) -> Bundle:
    """Check a bundle's manifest; raise :class:`UnusableServerJson` naming what is wrong."""
    if not isinstance(doc, dict):
        raise _fail("expected a JSON object")
    version = doc.get("manifest_version", doc.get("dxt_version"))
    if version not in MANIFEST_VERSIONS:
        raise _fail(
            f"manifest_version {version!r} is not one meworkd reads "
            f"({', '.join(MANIFEST_VERSIONS)})"
        )
    for key in ("name", "version", "description"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise _fail(f"{key}: missing")
    author = doc.get("author")
    if not isinstance(author, dict) or not isinstance(author.get("name"), str):
        raise _fail("author.name: missing")
    _check_server(doc.get("server"), str(version))
    _check_compatibility(doc.get("compatibility"), found)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", doc["name"]).strip("-.") or "bundle"
    return Bundle(doc, name, doc["version"], _user_inputs(doc.get("user_config")))


def _check_server(server: object, version: str) -> None:
    if not isinstance(server, dict):
        raise _fail("server: missing")
    kind = server.get("type")
    since = _SERVER_TYPES.get(kind) if isinstance(kind, str) else None
    if since is None or version < since:
        raise _fail(f"server.type {kind!r} is not one of manifest version {version}")
    if not isinstance(server.get("entry_point"), str):
        raise _fail("server.entry_point: missing")
    if not isinstance(server.get("mcp_config"), dict):
        raise _fail("server.mcp_config: missing (meworkd runs a bundle by its mcp_config)")


def _check_compatibility(compatibility: object, found: Callable[[str], bool]) -> None:
    if not isinstance(compatibility, dict):
        return
    platforms = compatibility.get("platforms")
    if isinstance(platforms, list) and sys.platform not in platforms:
        raise _fail(
            f"compatibility.platforms: {', '.join(map(str, platforms))}, not {sys.platform}"
        )
    runtimes = compatibility.get("runtimes")
    for runtime in runtimes if isinstance(runtimes, dict) else {}:
        command = _RUNTIME_COMMANDS.get(runtime)
        if command is not None and not found(command):
            raise _fail(
                f"compatibility.runtimes: the bundle needs {runtime} and {command} is not on "
                "meworkd's PATH"
            )


def _user_inputs(user_config: object) -> list[dict[str, Any]]:
    if user_config is None:
        return []
    if not isinstance(user_config, dict):
        raise _fail("user_config: expected an object")
    out = []
    for key, spec in user_config.items():
        if not isinstance(spec, dict) or spec.get("type") not in _USER_TYPES:
            raise _fail(f"user_config.{key}.type: expected one of {', '.join(_USER_TYPES)}")
        default = spec.get("default")
        if isinstance(default, bool):
            default = "true" if default else "false"
        out.append(
            {
                "id": key,
                "kind": "user_config",
                "description": str(spec.get("description") or spec.get("title") or ""),
                "required": spec.get("required") is True,
                "secret": spec.get("sensitive") is True,
                "format": spec["type"],
                "default": None if default is None else str(default),
                "choices": [],
                "min": spec.get("min"),
                "max": spec.get("max"),
            }
        )
    return out
