"""The daemon's wire spellings in meworkctl's words, for what a person reads (not for --json).

The daemon's messages serve every frontend, so a hint may name a request parameter
(``onConflict "replace"``); meworkctl says its own option instead. A value of the wrong type is
"expected float, got str" on the wire (JSON Schema's words, as the tests of every client read
them) and "expected a number, got a string" here. Error kinds
(``invalid_params``) and failure kinds (``unset_variable``) are for programs: the human output
leaves them out (the message says the same in words) and ``--json`` keeps them.
"""

from __future__ import annotations

import re

__all__ = ["in_own_words"]

# A request parameter named with its values in a daemon's sentence: ``onConflict "replace" or
# "skip"`` → ``--on-conflict replace or --on-conflict skip``.
_OPTIONS = {"onConflict": "--on-conflict"}
_NAMED = re.compile(r"\b(" + "|".join(_OPTIONS) + r')((?: "[^"]*"(?: or|,)?)+)')


_TYPES = {
    "float": "a number",
    "int": "a whole number",
    "str": "a string",
    "bool": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}
_TYPE = "(" + "|".join(_TYPES) + ")"
_EXPECTED = re.compile(rf"\bexpected {_TYPE}\b(?:, got {_TYPE}\b)?")


def in_own_words(text: str) -> str:
    """``text`` with each wire parameter it names spelled as meworkctl's option, and each
    type named in plain words."""

    def option(match: re.Match[str]) -> str:
        flag = _OPTIONS[match[1]]
        values = re.findall(r'"([^"]*)"', match[2])
        return " or ".join(f"{flag} {value}" for value in values)

    def types(match: re.Match[str]) -> str:
        said = f"expected {_TYPES[match[1]]}"
        return said + (f", got {_TYPES[match[2]]}" if match[2] else "")

    return _EXPECTED.sub(types, _NAMED.sub(option, text))
