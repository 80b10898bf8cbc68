"""The load probe's own ceiling: the client's CPU and event-loop lag while a level runs.

Rules:
- Each level records the client's CPU use (the whole process, and the event-loop thread alone)
  and the event loop's lag (a ticker that asks to wake every TICK_S; how late it wakes).
- A level is **client-limited** when the client, not the target, set the pace: loop lag p95 >=
  LAG_LIMIT_S, or the loop thread busy >= CPU_LIMIT of the wall time (one thread runs every send
  and receive; the judging runs in worker threads under the same GIL). `ClientLoad.limited_by`
  says why; every figure and verdict of such a level says so (`conformance.probes.load`).
- A level split across sender processes (`conformance.probes.senders`) has one monitor per
  sender; `ClientLoad.merged` adds their CPU, keeps the busiest loop thread's, and pools the lag
  ticks, so a level is client-limited when any sender set the pace.
- `ClientMonitor(delay_s=...)` is a test hook: the loop is blocked that long every tick, so it
  lags without the process burning CPU (a slow client, not a CPU hog).
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from conformance.probes.common import percentile

LAG_LIMIT_S = 0.1  # event-loop lag p95 at or past this: the client set the pace
CPU_LIMIT = 0.9  # the event-loop thread busy for this share of the wall time: the client set the pace
TICK_S = 0.01


@dataclass
class ClientLoad:
    """What the probe's own process did while one level ran."""

    wall_s: float
    cpu_s: float  # CPU time of the whole process (every thread; an in-process server counts too)
    loop_cpu_s: float  # CPU time of the event-loop thread alone
    lags: list[float]  # how late each tick woke, seconds

    @property
    def cpu_share(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def loop_cpu_share(self) -> float:
        return self.loop_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def lag_p95_s(self) -> float:
        return percentile(self.lags, 95) or 0.0

    @property
    def lag_max_s(self) -> float:
        return max(self.lags, default=0.0)

    @property
    def limited_by(self) -> str | None:
        """Why the client set the pace at this level, or None when it did not."""
        why = []
        if self.lag_p95_s >= LAG_LIMIT_S:
            why.append(f"event-loop lag p95 {self.lag_p95_s * 1000:.0f} ms >= {LAG_LIMIT_S * 1000:.0f} ms")
        if self.loop_cpu_share >= CPU_LIMIT:
            why.append(f"event-loop thread busy {self.loop_cpu_share:.0%} of the wall time")
        return "; ".join(why) or None

    @classmethod
    def merged(cls, loads: list[ClientLoad], wall_s: float) -> ClientLoad:
        """A level split across sender processes: their CPU added up, the busiest event-loop
        thread's CPU (the one that sets the pace first), and every loop's lag ticks."""
        return cls(wall_s, sum(x.cpu_s for x in loads), max((x.loop_cpu_s for x in loads), default=0.0),
                   [lag for x in loads for lag in x.lags])

    def figures(self) -> dict[str, Any]:
        return {"client_cpu_percent": round(100 * self.cpu_share, 1),
                "client_loop_cpu_percent": round(100 * self.loop_cpu_share, 1),
                "client_loop_lag_p95_ms": round(self.lag_p95_s * 1000, 1),
                "client_loop_lag_max_ms": round(self.lag_max_s * 1000, 1),
                "client_limited": self.limited_by is not None,
                "client_limited_by": self.limited_by}


class ClientMonitor:
    """`async with ClientMonitor() as mon:` around a level; `mon.result` afterwards.

    `delay_s` is a test hook: every tick the loop is blocked that long with time.sleep, so the
    loop lags without the process burning CPU (a slow client, not a CPU hog)."""

    def __init__(self, *, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.result: ClientLoad | None = None
        self._lags: list[float] = []
        self._tasks: list[asyncio.Task] = []

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(TICK_S)
            self._lags.append(max(0.0, loop.time() - t - TICK_S))

    async def _delay(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            time.sleep(self.delay_s)  # blocks the loop on purpose (the test hook)

    async def __aenter__(self) -> ClientMonitor:
        self._t0, self._cpu0, self._loop_cpu0 = time.monotonic(), time.process_time(), time.thread_time()
        self._thread = threading.get_ident()
        self._tasks.append(asyncio.create_task(self._tick()))
        if self.delay_s > 0:
            self._tasks.append(asyncio.create_task(self._delay()))
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        assert threading.get_ident() == self._thread, "a monitor is entered and left on its loop's thread"
        self.result = ClientLoad(time.monotonic() - self._t0, time.process_time() - self._cpu0,
                                 time.thread_time() - self._loop_cpu0, list(self._lags))
