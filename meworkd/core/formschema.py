"""Elicitation forms: check a server's requested schema, and check and complete an answer.

MCP allows a flat object of primitive fields (string, number, integer, boolean, single- and
multi-select enums). The daemon checks the schema before asking anyone, then checks what a
frontend sends against it, filling in each field's ``default`` the user left out (SEP-1034),
so every frontend gets the same rules and the server gets only a valid answer.
"""

import re
from typing import Any

from mework_protocol.forms import field_choices

from meworkd.base.errors import InvalidParams

__all__ = ["complete_answer", "schema_problem"]

PRIMITIVES = ("string", "number", "integer", "boolean")
# A string format the form checks: its pattern, and how an answer names what it expected.
_FORMATS = {
    "email": (re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"), "an email address"),
    "uri": (re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$"), "a URI"),
    "date": (re.compile(r"^\d{4}-\d{2}-\d{2}$"), "a date (YYYY-MM-DD)"),
    "date-time": (
        re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$"),
        "a date and time (ISO 8601)",
    ),
}


def schema_problem(schema: object) -> str | None:
    """Why ``schema`` is no flat elicitation form (None when it is one)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "requestedSchema must be an object schema"
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return "requestedSchema must have properties"
    for name, field in properties.items():
        if not isinstance(field, dict):
            return f"field {name!r} is not a schema"
        kind = field.get("type")
        if kind == "array":
            items = field.get("items")
            if not isinstance(items, dict) or field_choices(items) is None:
                return f"field {name!r}: an array must be a multi-select of fixed choices"
        elif kind not in PRIMITIVES:
            return f"field {name!r}: type {kind!r} is not allowed in a form (flat primitives only)"
    return None


def complete_answer(schema: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with the defaults of the fields left out, checked against ``schema``.

    Raises:
        InvalidParams: a field unknown, missing although required, or not what its schema says.
    """
    properties: dict[str, Any] = schema.get("properties", {})
    answer = dict(content or {})
    unknown = sorted(set(answer) - set(properties))
    if unknown:
        raise InvalidParams(f"the form has no field {unknown[0]!r}", field=unknown[0])
    for name, field in properties.items():
        if name not in answer and "default" in field:
            answer[name] = field["default"]
    problems = [
        f"{name}: {p}" for name in answer if (p := _field_problem(properties[name], answer[name]))
    ]
    missing = [n for n in schema.get("required", []) if n not in answer]
    problems += [f"{name}: required" for name in missing]
    if problems:
        raise InvalidParams(
            "the answer does not fit the form: " + "; ".join(problems), problems=problems
        )
    return answer


def _field_problem(field: dict[str, Any], value: Any) -> str | None:
    kind = field.get("type")
    if kind == "array":
        return _array_problem(field, value)
    choices = field_choices(field)
    if choices is not None and value not in choices:
        return f"expected one of {choices}"
    if kind == "string":
        return _string_problem(field, value)
    if kind == "boolean":
        return None if isinstance(value, bool) else "expected true or false"
    if kind == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
        return "expected an integer"
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        return "expected a number"
    if "minimum" in field and value < field["minimum"]:
        return f"expected at least {field['minimum']}"
    if "maximum" in field and value > field["maximum"]:
        return f"expected at most {field['maximum']}"
    return None


def _string_problem(field: dict[str, Any], value: Any) -> str | None:
    if not isinstance(value, str):
        return "expected a string"
    if len(value) < field.get("minLength", 0):
        return f"expected at least {field['minLength']} characters"
    if "maxLength" in field and len(value) > field["maxLength"]:
        return f"expected at most {field['maxLength']} characters"
    checked = _FORMATS.get(field.get("format", ""))
    if checked is not None and not checked[0].match(value):
        return f"expected {checked[1]}"
    return None


def _array_problem(field: dict[str, Any], value: Any) -> str | None:
    if not isinstance(value, list):
        return "expected a list of choices"
    choices = field_choices(field.get("items", {})) or []
    wrong = [v for v in value if v not in choices]
    if wrong:
        return f"{wrong[0]!r} is not one of {choices}"
    if len(value) < field.get("minItems", 0):
        return f"choose at least {field['minItems']}"
    if "maxItems" in field and len(value) > field["maxItems"]:
        return f"choose at most {field['maxItems']}"
    return None
