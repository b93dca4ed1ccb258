"""The wording of a form answer that does not fit its field's format (a pure function)."""

from __future__ import annotations

import pytest

from meworkd.base.errors import InvalidParams
from meworkd.core.formschema import complete_answer


@pytest.mark.parametrize(
    ("fmt", "said"),
    [
        ("email", "an email address"),
        ("uri", "a URI"),
        ("date", "a date (YYYY-MM-DD)"),
        ("date-time", "a date and time (ISO 8601)"),
    ],
)
def test_a_value_not_in_its_format_is_named_with_the_right_article(fmt: str, said: str) -> None:
    schema = {"properties": {"x": {"type": "string", "format": fmt}}}
    with pytest.raises(InvalidParams) as refused:
        complete_answer(schema, {"x": "no"})
    assert f"x: expected {said}" in str(refused.value)
