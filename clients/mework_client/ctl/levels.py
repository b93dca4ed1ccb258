"""The ``--level`` argument of ``conv`` and ``presets``: the approval levels as argparse choices.

Apart from :mod:`.command` so that ``meworkctl status`` does not load ``mework_protocol.levels``
(which needs ``typing``; start-up time, bench B6).
"""

from typing import Any

from mework_protocol.levels import APPROVAL_LEVELS

__all__ = ["LEVEL_CHOICES", "LEVEL_HELP"]

LEVEL_CHOICES: dict[str, Any] = {"choices": APPROVAL_LEVELS, "metavar": "LEVEL"}
LEVEL_HELP = f"approval level: {', '.join(APPROVAL_LEVELS)}"
