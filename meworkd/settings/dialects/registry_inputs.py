"""The inputs a registry's server.json asks of the user, filled from what the user supplied.

A server.json input (an environment variable, a header, an argument, a ``{variable}`` of a
value) has a fixed ``value``, or is the user's to give (``default``, ``choices``, ``isRequired``,
``isSecret``). Supplied values are keyed by the variable's, header's or argument's name; a
supplied value may be a ``${VAR}`` reference, stored as such (the secret stays in meworkd's
environment). A fixed value or default written by the publisher may not hold ``${``: meworkd
would expand it from its own environment and hand, say, ``${GITHUB_TOKEN}`` to the server.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from meworkd.base.errors import InvalidParams, UnusableServerJson
from meworkd.settings.secrets import DESCRIPTIVE_HEADERS, is_secret_name

__all__ = ["InputSet", "check_secret", "kept_as_secret", "publisher_text"]

_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def kept_as_secret(kind: str, name: str) -> bool:
    """Whether meworkd masks and redacts a value stored as ``kind`` ``name`` (docs/api.md
    "Secrets"): an env value under a secret-sounding name, a header other than a descriptive
    one. A secret given for anywhere else must be a ``${VAR}`` reference instead."""
    if kind == "env":
        return is_secret_name(name)
    return kind == "header" and name.lower() not in DESCRIPTIVE_HEADERS


def check_secret(key: str, value: str, kind: str) -> None:
    """Refuse a secret's literal ``value`` where it would be stored unmasked."""
    if not kept_as_secret(kind, key) and not _REFERENCE.fullmatch(value):
        raise InvalidParams(
            f"inputs.{key}: a secret stored here would show in the settings file and logs; "
            "give it as a ${VAR} reference to meworkd's environment (e.g. ${"
            + re.sub(r"[^A-Za-z0-9_]", "_", key).upper().strip("_")
            + "})",
            input=key,
        )


# A template variable of a server.json value: {name}.
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def publisher_text(where: str, value: object) -> str:
    """``value`` as text the publisher wrote: scalars only, never a ``${...}`` reference."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if not isinstance(value, str):
        raise UnusableServerJson(f"{where}: expected a string, found {type(value).__name__}")
    if "${" in value:
        raise UnusableServerJson(
            f"{where}: holds ${{...}}, which meworkd would expand from its own environment; "
            "a registry's value may not read meworkd's variables"
        )
    return value


@dataclass(slots=True)
class InputSet:
    """The inputs of one install: what each is, what is missing, what the user gave."""

    supplied: Mapping[str, str]
    inputs: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def resolve(self, where: str, key: str, spec: Mapping[str, Any], kind: str) -> str | None:
        """``spec``'s value: fixed, supplied, default; None when nobody gave one (a required
        one is then listed as missing)."""
        if "value" in spec and spec["value"] is not None:
            fixed = publisher_text(f"{where}.value", spec["value"])
            return self.fill(where, fixed, spec.get("variables"))
        self._describe(where, key, spec, kind)
        if key in self.supplied:
            given = self.supplied[key]
            choices = spec.get("choices")
            if isinstance(choices, list) and choices and given not in map(str, choices):
                raise InvalidParams(
                    f"inputs.{key}: expected one of {', '.join(map(str, choices))}", input=key
                )
            if spec.get("isSecret") is True:
                check_secret(key, given, kind)
            return given
        if spec.get("default") is not None:
            return publisher_text(f"{where}.default", spec["default"])
        if spec.get("isRequired") is True:
            self.missing.append(key)
        return None

    def fill(self, where: str, text: str, variables: object) -> str | None:
        """``text`` with its ``{name}`` variables filled (None if a variable has no value)."""
        declared = variables if isinstance(variables, dict) else {}
        values: dict[str, str] = {}
        for name in dict.fromkeys(_TEMPLATE.findall(text)):
            spec = declared.get(name)
            if not isinstance(spec, dict):
                raise UnusableServerJson(
                    f"{where}: the template variable {{{name}}} is not declared in its "
                    "variables, so nobody can fill it"
                )
            value = self.resolve(f"{where}.variables.{name}", name, {**spec}, "variable")
            if value is None:
                if name not in self.missing:
                    self.missing.append(name)  # the value cannot be made without it
                continue
            values[name] = value
        if len(values) < len(set(_TEMPLATE.findall(text))):
            return None
        return _TEMPLATE.sub(lambda m: values[m[1]], text)

    def _describe(self, where: str, key: str, spec: Mapping[str, Any], kind: str) -> None:
        if any(i["id"] == key for i in self.inputs):
            return
        choices = spec.get("choices")
        description = spec.get("description")
        self.inputs.append(
            {
                "id": key,
                "kind": kind,
                "description": description if isinstance(description, str) else "",
                "required": spec.get("isRequired") is True,
                "secret": spec.get("isSecret") is True,
                "format": spec.get("format") if isinstance(spec.get("format"), str) else "string",
                "default": None if spec.get("default") is None else str(spec.get("default")),
                "choices": [str(c) for c in choices] if isinstance(choices, list) else [],
                "given": key in self.supplied,
            }
        )

    def needs(self) -> list[dict[str, Any]]:
        """The inputs still to be given, as the install's ``needsInputs``."""
        by_id = {i["id"]: i for i in self.inputs}
        return [
            by_id.get(key, {"id": key, "kind": "variable", "required": True})
            for key in dict.fromkeys(self.missing)
        ]
