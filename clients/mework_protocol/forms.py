"""Reading an elicitation form's requested schema: facts the daemon (which checks answers) and
every frontend (which asks for them) must read alike."""

from typing import Any

__all__ = ["field_choices"]


def field_choices(field: dict[str, Any]) -> list[Any] | None:
    """The values a form field allows (``enum``, or the ``const`` of each ``oneOf``/``anyOf``
    option, as the spec's titled enums are written), or None when it is free."""
    if isinstance(field.get("enum"), list):
        return list(field["enum"])
    for key in ("oneOf", "anyOf"):
        if isinstance(field.get(key), list):
            return [o.get("const") for o in field[key] if isinstance(o, dict)]
    return None
