"""A registry's server.json as a meworkd entry: its ways to run (choices) and the chosen one.

A server.json offers packages (npm, PyPI, OCI images, NuGet, bundles) and remotes. Each is a
choice; the chosen one becomes an entry that meworkd starts without a shell:

- ``npm`` → ``npx -y <runtime args> pkg@version <package args>``
- ``pypi`` → ``uvx <runtime args> pkg==version <package args>``
- ``oci`` → ``docker run -i --rm <runtime args> -e NAME… image <package args>``
- ``nuget`` → ``dnx <runtime args> pkg@version [-- <package args>]`` (the registry's own example)
- ``mcpb`` → the bundle at the URL, once its SHA-256 matches ``fileSha256`` (a bundle's
  manifest then makes the entry)
- a ``streamable-http`` remote → a Streamable HTTP entry (URL template and headers filled)

The old HTTP+SSE transport is refused, as everywhere in meworkd. A package name or version that
could be read as an option or as more than one word (``--foo``, ``-e``, spaces) is refused
before anything is written; so is an unknown ``registryType`` once chosen.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from meworkd.base.errors import InvalidParams, UnusableServerJson
from meworkd.settings.dialects.registry_inputs import InputSet, publisher_text

__all__ = ["RUNTIMES", "Planned", "choices_of", "entry_name", "plan_install"]

# The command each registry type runs with, and how a person gets it.
RUNTIMES = {
    "npm": ("npx", "install Node.js, which provides npx: https://nodejs.org/en/download"),
    "pypi": ("uvx", "install uv, which provides uvx: https://docs.astral.sh/uv/"),
    "oci": ("docker", "install Docker: https://docs.docker.com/get-started/get-docker/"),
    "nuget": ("dnx", "install the .NET 10 SDK, which provides dnx: https://dotnet.microsoft.com"),
}
# Names a package manager would take as an option or as more than one word are refused.
_IDENTIFIER = {
    "npm": re.compile(r"^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*$"),
    "pypi": re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"),
    "oci": re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$"),
    "nuget": re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$"),
}
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_FLAG = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9._-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_DEFAULT_BASE = {"npm": "https://registry.npmjs.org", "pypi": "https://pypi.org"}


@dataclass(slots=True)
class Planned:
    """What installing one choice would store, and what it still needs."""

    choice: int
    entry: dict[str, Any]
    inputs: list[dict[str, Any]] = field(default_factory=list)
    needs_inputs: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # A bundle to download (URL, SHA-256): its manifest, not the server.json, makes the entry.
    bundle: tuple[str, str] | None = None


def _required_text(doc: Mapping[str, Any], key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UnusableServerJson(f"{where}{key}: missing (the server.json must give it)")
    return value


def choices_of(server: Mapping[str, Any], found: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Every package and remote of ``server``, each with whether meworkd can install it."""
    _required_text(server, "name", "")
    packages, remotes = server.get("packages") or [], server.get("remotes") or []
    if not isinstance(packages, list) or not isinstance(remotes, list):
        raise UnusableServerJson("packages and remotes: expected lists")
    out = [_package_choice(i, p, found) for i, p in enumerate(packages)]
    out += [_remote_choice(len(packages) + i, i, r) for i, r in enumerate(remotes)]
    if not out:
        raise UnusableServerJson("the server.json has no packages and no remotes: nothing to run")
    return out


def _package_choice(index: int, package: object, found: Callable[[str], bool]) -> dict[str, Any]:
    if not isinstance(package, dict):
        return {"index": index, "kind": "package", "supported": False, "why": "not an object"}
    kind = package.get("registryType")
    out: dict[str, Any] = {
        "index": index,
        "kind": kind,
        "identifier": package.get("identifier"),
        "version": package.get("version"),
        "transport": (package.get("transport") or {}).get("type", "stdio")
        if isinstance(package.get("transport"), dict | None)
        else None,
    }
    why = _package_problem(package)
    if why is None and isinstance(kind, str) and kind in RUNTIMES:
        runtime, how = RUNTIMES[kind]
        out.update(runtime=runtime, runtimeFound=found(runtime))
        if not out["runtimeFound"]:
            out["howToGetRuntime"] = how
    return {**out, "supported": why is None, "why": why}


def _package_problem(package: Mapping[str, Any]) -> str | None:
    kind = package.get("registryType")
    if kind == "mcpb":
        url, digest = package.get("identifier"), package.get("fileSha256")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s]+$", url):
            return "a bundle whose identifier is not a download URL"
        if not isinstance(digest, str) or not _SHA256.match(digest):
            return "a bundle without fileSha256, which must be checked before it runs"
        return None
    if not isinstance(kind, str) or kind not in RUNTIMES:
        return f"registryType {kind!r} is not one meworkd installs (npm, pypi, oci, nuget)"
    transport = package.get("transport")
    kind_of = transport.get("type") if isinstance(transport, dict) else "stdio"
    if kind_of != "stdio":
        return f"transport {kind_of!r}: meworkd runs packages over stdio only"
    base = package.get("registryBaseUrl")
    if base is not None and (
        not isinstance(base, str) or base.rstrip("/") != _DEFAULT_BASE.get(kind, base).rstrip("/")
    ):
        return f"registryBaseUrl {base!r}: only the public {kind} registry is supported"
    return None


def _remote_choice(index: int, position: int, remote: object) -> dict[str, Any]:
    if not isinstance(remote, dict):
        return {"index": index, "kind": "remote", "supported": False, "why": "not an object"}
    kind = remote.get("type")
    why = None
    if kind == "sse":
        why = "the old HTTP+SSE transport, which meworkd does not support"
    elif kind != "streamable-http":
        why = f"remote type {kind!r} is not streamable-http"
    return {
        "index": index,
        "kind": "remote",
        "remote": position,
        "transport": kind,
        "url": remote.get("url"),
        "supported": why is None,
        "why": why,
    }


def entry_name(server_name: str) -> str:
    """A settings entry name for a registry server: ``io.github.x/weather`` → ``weather``."""
    tail = server_name.rsplit("/", 1)[-1]
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-.")
    return cleaned or "server"


def plan_install(
    server: Mapping[str, Any],
    choice: int | None,
    supplied: Mapping[str, str],
    found: Callable[[str], bool],
) -> Planned:
    """The entry ``choice`` (default: the first supported whose runtime is here) would add."""
    options = choices_of(server, found)
    if choice is None:
        usable = [c for c in options if c["supported"]]
        if not usable:
            raise UnusableServerJson(
                "none of the server's ways to run is one meworkd installs: "
                + "; ".join(f"#{c['index']}: {c['why']}" for c in options)
            )
        here = [c for c in usable if c.get("runtimeFound", True)]
        choice = (here or usable)[0]["index"]
    if not 0 <= choice < len(options):
        raise InvalidParams(f"choice: expected 0 to {len(options) - 1}", choice=choice)
    picked = options[choice]
    if not picked["supported"]:
        raise UnusableServerJson(f"choice {choice}: {picked['why']}")
    if picked["kind"] == "mcpb":
        package = server["packages"][choice]
        return Planned(choice, {}, bundle=(package["identifier"], package["fileSha256"].lower()))
    inputs = InputSet(supplied)
    if picked["kind"] == "remote":
        entry = _remote_entry(server["remotes"][picked["remote"]], picked["remote"], inputs)
    else:
        entry = _package_entry(server["packages"][choice], choice, inputs)
    description = server.get("description")
    if isinstance(description, str) and description.strip():
        entry["description"] = description.strip()[:300]
    plan = Planned(choice, entry, inputs.inputs, inputs.needs())
    if picked.get("runtimeFound") is False:
        plan.warnings.append(
            f"{picked['runtime']} was not found on meworkd's PATH: {picked['howToGetRuntime']}"
        )
    return plan


def _package_entry(package: Mapping[str, Any], index: int, inputs: InputSet) -> dict[str, Any]:
    where = f"packages[{index}]"
    kind = package["registryType"]
    identifier = _required_text(package, "identifier", f"{where}.")
    if not _IDENTIFIER[kind].match(identifier):
        raise UnusableServerJson(
            f"{where}.identifier: {identifier!r} is not a plain {kind} package name (it could "
            "be read as an option or as more than one word)"
        )
    version = package.get("version")
    if version is None and kind != "oci":
        raise UnusableServerJson(f"{where}.version: missing (an exact version is required)")
    if version is not None and (
        not isinstance(version, str) or not _VERSION.match(version) or version == "latest"
    ):
        raise UnusableServerJson(f"{where}.version: {version!r} is not an exact version")
    runtime_args = _arguments(package.get("runtimeArguments"), f"{where}.runtimeArguments", inputs)
    package_args = _arguments(package.get("packageArguments"), f"{where}.packageArguments", inputs)
    env = _named_values(
        package.get("environmentVariables"), f"{where}.environmentVariables", inputs, "env"
    )
    command, args = RUNTIMES[kind][0], list(runtime_args)
    if kind == "npm":
        args = ["-y", *args, f"{identifier}@{version}", *package_args]
    elif kind == "pypi":
        args = [*args, f"{identifier}=={version}", *package_args]
    elif kind == "nuget":
        args = [*args, f"{identifier}@{version}", *(["--", *package_args] if package_args else [])]
    else:
        image = identifier
        if version is not None and not re.search(r"(:[^/]+|@sha256:[0-9a-f]+)$", identifier):
            image = f"{identifier}:{version}"
        passed = [item for name in env for item in ("-e", name)]
        args = ["run", "-i", "--rm", *args, *passed, image, *package_args]
    entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
    if env:
        entry["env"] = env
    return entry


def _remote_entry(remote: Mapping[str, Any], index: int, inputs: InputSet) -> dict[str, Any]:
    where = f"remotes[{index}]"
    template = publisher_text(f"{where}.url", _required_text(remote, "url", f"{where}."))
    url = inputs.fill(f"{where}.url", template, remote.get("variables"))
    if url is not None and not re.match(r"^https?://[^\s]+$", url):
        raise UnusableServerJson(f"{where}.url: {url!r} is not an http:// or https:// URL")
    headers = _named_values(remote.get("headers"), f"{where}.headers", inputs, "header")
    entry: dict[str, Any] = {"type": "streamable_http", "url": url or template}
    if headers:
        entry["headers"] = headers
    return entry


def _named_values(items: object, where: str, inputs: InputSet, kind: str) -> dict[str, str]:
    """Environment variables or headers: ``{name: value}`` of those that have a value."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise UnusableServerJson(f"{where}: expected a list")
    pattern = _ENV_NAME if kind == "env" else _HEADER_NAME
    out: dict[str, str] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise UnusableServerJson(f"{where}[{i}]: expected an object")
        name = _required_text(item, "name", f"{where}[{i}].")
        if not pattern.match(name):
            raise UnusableServerJson(f"{where}[{i}].name: {name!r} is not a valid {kind} name")
        value = inputs.resolve(f"{where}[{i}]", name, item, kind)
        if value is not None:
            out[name] = value
    return out


def _arguments(items: object, where: str, inputs: InputSet) -> list[str]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise UnusableServerJson(f"{where}: expected a list")
    out: list[str] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise UnusableServerJson(f"{at}: expected an object")
        if item.get("type") == "named":
            flag = _required_text(item, "name", f"{at}.")
            if not _FLAG.match(flag):
                raise UnusableServerJson(f"{at}.name: {flag!r} is not an option name")
            value = inputs.resolve(at, flag, item, "argument")
            if value is not None:
                out += [flag, value]
            elif "value" not in item and not _takes_input(item):
                out.append(flag)  # a bare flag: nothing to ask
        elif item.get("type") == "positional":
            hint = item.get("valueHint")
            key = hint if isinstance(hint, str) and hint else f"{where}[{i}]"
            value = inputs.resolve(at, key, item, "argument")
            if value is not None:
                out.append(value)
        else:
            raise UnusableServerJson(f"{at}.type: expected positional or named")
    return out


def _takes_input(item: Mapping[str, Any]) -> bool:
    keys = ("default", "isRequired", "choices", "format", "valueHint", "description", "isSecret")
    return any(key in item for key in keys)
