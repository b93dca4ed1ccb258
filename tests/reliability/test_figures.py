"""The figures of docs/reliability.md tell the truth about what the suite tries (issue 8, part 7).

The fixed figures (case counts, schedule lengths, scenario counts, bounds) are rendered from
``figures.py`` and must match the doc's ``fixed`` block: change a count without updating the doc
and this fails. Run ``MEWORKD_WRITE_RELIABILITY=1 pytest tests/reliability`` to rewrite that block
and, from ``.last-run.json``, the ``measured`` block (timings and memory move from run to run, so
a normal run never checks them).
"""

from __future__ import annotations

import os

from tests.reliability import figures


def test_doc_fixed_figures_are_current() -> None:
    text = figures.DOC.read_text()
    expected = figures.render_deterministic()
    if os.environ.get("MEWORKD_WRITE_RELIABILITY") == "1":
        figures.DOC.write_text(figures.replace_block(text, "fixed", expected))
        text = figures.DOC.read_text()
    current = figures.read_block(text, "fixed")
    assert current is not None, "docs/reliability.md has no <!-- figures:fixed:begin --> block"
    assert current == expected, (
        "docs/reliability.md is stale: run MEWORKD_WRITE_RELIABILITY=1 pytest tests/reliability"
    )


def test_doc_has_a_measured_block() -> None:
    text = figures.DOC.read_text()
    assert figures.read_block(text, "measured") is not None


def test_doc_names_every_scenario() -> None:
    text = figures.DOC.read_text()
    names = [
        *figures.SERVER_FAULTS,
        *figures.DAEMON_FAULTS,
        *figures.FIXED_HOSTILE_INPUTS,
        *figures.SECURITY_CHECKS,
        *figures.FUZZ_EXAMPLES,
    ]
    missing = [name for name in names if f"`{name}`" not in text]
    assert missing == [], f"docs/reliability.md does not describe: {missing}"
