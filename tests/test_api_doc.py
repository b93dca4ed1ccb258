"""docs/api.md documents exactly the methods and events the daemon has."""

import re
from pathlib import Path

import pytest

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from meworkd.base.events import TOPICS

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def documented_methods() -> set[str]:
    return set(re.findall(r"^### ([a-z]+\.[A-Za-z]+)$", DOC.read_text(), re.MULTILINE))


def documented_events() -> set[str]:
    section = DOC.read_text().split("## Events", 1)[1]
    return set(re.findall(r"^\| `([a-z]+\.[A-Za-z_]+)` \|", section, re.MULTILINE))


@pytest.mark.anyio
async def test_every_registered_method_is_documented_and_nothing_else(short_tmp: Path) -> None:
    daemon = Daemon(Paths(short_tmp / "s.json", short_tmp / "d.sock", short_tmp / "state"))
    registered = set(daemon.methods.names())
    assert registered - documented_methods() == set(), "methods missing from docs/api.md"
    assert documented_methods() - registered == set(), "docs/api.md names unknown methods"


def test_every_event_topic_is_documented() -> None:
    # events.overflowed is the connection-level notice, not a bus topic.
    assert documented_events() == set(TOPICS) | {"events.overflowed"}


def test_every_documented_method_has_an_example_exchange() -> None:
    text = DOC.read_text()
    for method in documented_methods():
        section = text.split(f"### {method}\n", 1)[1].split("\n### ", 1)[0]
        assert f'"method":"{method}"' in section, method
        assert "←" in section, method
