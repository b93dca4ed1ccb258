"""Fixture "server" (standard library only) that says a few lines on stderr, then never answers
``initialize``: a start-up that only a timeout ends. The last line quotes ``API_TOKEN``, which
must come back redacted."""

import os
import sys

for i in range(3):
    print(f"mute: starting {i}", file=sys.stderr, flush=True)
print("mute: token=" + os.environ.get("API_TOKEN", ""), file=sys.stderr, flush=True)
sys.stdin.read()  # holds the request unanswered until meworkd closes the pipe
