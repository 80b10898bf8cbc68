"""`dies-under-sustained-load`: the engine's worker dies after it has held shared-prefix sessions.

Rules:
- The fault models a failure that only sustained load finds (an engine that survives a burst of
  concurrent requests but whose worker dies after minutes of concurrent long-context sessions that
  reuse one prefix). It arms when at least `die_at_inflight` generation requests sharing one
  prefix (system prompt, instructions and tools) are in flight at once, and it fires once the
  engine has stayed in that state for `die_after_s` seconds.
- Short gaps do not reset the clock: agent sessions pause between turns (the client runs tools),
  so the clock resets only when the shared-prefix load has been below the threshold for longer
  than IDLE_RESET_SECONDS. A concurrency ramp (salted prompts, short levels) never arms it.
- Once dead it stays dead until the process is restarted: every generation request is answered
  500 in the route's error envelope (the way a server whose engine worker died answers), and the
  streams in flight are cut. The rest of the server (/v1/models, health) keeps answering, as the
  HTTP front of such a server does.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# The default thresholds (engine options `--die-after` and `--die-at-inflight` override them).
DIE_AFTER_SECONDS = 30.0
DIE_AT_INFLIGHT = 4
# Below the threshold for longer than this, the sustained-load clock starts again.
IDLE_RESET_SECONDS = 2.0


def prefix_key(body: dict[str, Any]) -> str:
    """What concurrent sessions share: the system prompt / instructions and the tools."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    leading_system = [m for m in messages[:1] if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    shared = [body.get("system"), body.get("instructions"), leading_system, body.get("tools")]
    return hashlib.sha256(json.dumps(shared, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class SustainedLoad:
    die_after_s: float = DIE_AFTER_SECONDS
    die_at_inflight: int = DIE_AT_INFLIGHT
    inflight: dict[int, str] = field(default_factory=dict)  # request id -> prefix key
    held_since: float | None = None
    last_held: float | None = None
    died_at: float | None = None  # wall-clock time of death

    @property
    def dead(self) -> bool:
        return self.died_at is not None

    def _held(self) -> bool:
        counts = Counter(self.inflight.values())
        return bool(counts) and max(counts.values()) >= self.die_at_inflight

    def _tick(self, now: float) -> None:
        if self._held():
            if self.held_since is None or (self.last_held is not None and now - self.last_held > IDLE_RESET_SECONDS):
                self.held_since = now
            self.last_held = now
        if self.held_since is not None and self.last_held is not None and now - self.last_held > IDLE_RESET_SECONDS:
            self.held_since = None
        if self.held_since is not None and now - self.held_since >= self.die_after_s and not self.dead:
            self.died_at = time.time()
            print(f"reference engine: dies-under-sustained-load: {self.die_at_inflight}+ shared-prefix requests "
                  f"in flight for {self.die_after_s:g} s; the worker is dead from now on", file=sys.stderr, flush=True)

    def start(self, request_id: int, body: dict[str, Any]) -> bool:
        """Record a request starting; True when the engine is (now) dead."""
        now = time.monotonic()
        self._tick(now)  # the gap before this request counts as below threshold
        self.inflight[request_id] = prefix_key(body)
        self._tick(now)
        return self.dead

    def finish(self, request_id: int) -> None:
        self._tick(time.monotonic())
        self.inflight.pop(request_id, None)
