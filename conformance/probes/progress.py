"""Progress lines of the long probes: which level, length, depth or stack runs, how far along it is.

Rules:
- A probe says what starts (`emit("context: needle length 2/4 ...")`) and, while one request or
  step takes long, `step(label)` repeats "still running (N s)" every HEARTBEAT_S seconds, so a
  person watching never sees more than a few seconds of silence.
- Lines go to one sink: stderr by default; the suite installs a sink that writes past pytest's
  output capture (`set_sink`). A probe function may take its own sink (tests collect the lines).
- Progress is never a verdict and never part of the results record.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

Sink = Callable[[str], None]
HEARTBEAT_S = 3.0
PREFIX = "[conformance] "


def _stderr(line: str) -> None:
    print(PREFIX + line, file=sys.stderr, flush=True)


_SINK: list[Sink] = [_stderr]


def set_sink(sink: Sink | None) -> None:
    """Where progress lines go (None: back to stderr)."""
    _SINK[0] = sink or _stderr


def emit(line: str, sink: Sink | None = None) -> None:
    try:
        (sink or _SINK[0])(line)
    except Exception:  # noqa: BLE001 - a broken terminal must not break a probe
        pass


@asynccontextmanager
async def step(label: str, sink: Sink | None = None, every: float = HEARTBEAT_S) -> AsyncIterator[None]:
    """Say `label` now, then "still running" every `every` seconds until the block ends."""
    emit(label, sink)
    t0 = time.monotonic()

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            emit(f"{label}: still running ({time.monotonic() - t0:.0f} s)", sink)

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()
