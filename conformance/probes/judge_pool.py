"""Judging a load level's exchanges on every core, not in the thread that sends them.

Rules:
- The load probe's event loop sends and reads; the judge (`check_exchange`) is CPU work. In
  threads it shares one interpreter lock with the loop, so past a few dozen streams the loop
  waits on the judge and the probe, not the target, sets the pace. A level of at least
  `PROCESSES_FROM` requests therefore judges in worker processes, one per core (`os.cpu_count()`),
  while the loop goes on reading; a smaller level judges in a thread, since starting the
  workers (~0.3 s) costs more than it saves there.
- The workers are started once per process, on first use, with the `spawn` start method (the
  probe's process has threads; forking it could copy a held lock), reused by every later level
  and probe, and stopped at exit.
- A worker runs the same function on the same bytes (`check_exchange(raw, request, wire=name)`;
  judging reads no process state), so a verdict is the same in a worker as in a thread
  (tests/probes/test_judge_pool.py compares them). Only what a load record keeps comes back:
  the violations and the output tokens.
- A worker that dies (killed, out of memory) costs nothing but time: that exchange and the
  rest of the process's levels are judged in a thread, and the probe says nothing different.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.core.failures import Violation
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect

PROCESSES_FROM = 64  # requests in a level from which the judge runs in worker processes

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_broken = False


def judge_record(raw: RawExchange, request: dict[str, Any], wire_name: str) -> tuple[list[Violation], int | None]:
    """What a load record keeps of the judge's verdict: the violations and the output tokens."""
    verdict = check_exchange(raw, request, wire=wire_name)
    return list(verdict.violations), dialect(wire_name).output_tokens(verdict.message)


def worker_count() -> int:
    return max(1, (os.cpu_count() or 1) - 1)


def _processes() -> ProcessPoolExecutor | None:
    global _pool
    with _lock:
        if _pool is None and not _broken:
            _pool = ProcessPoolExecutor(worker_count(), mp_context=multiprocessing.get_context("spawn"))
            atexit.register(_pool.shutdown, wait=False, cancel_futures=True)
        return _pool


def _ready() -> int:
    return os.getpid()


def start() -> bool:
    """Start the workers now and wait until each has imported the judge (a level that will judge
    in processes calls this before its clock starts). False when processes are not available."""
    pool = _processes()
    if pool is None:
        return False
    try:
        for future in [pool.submit(_ready) for _ in range(worker_count())]:
            future.result(timeout=60)
    except (BrokenProcessPool, TimeoutError, OSError):
        _give_up_processes()
        return False
    return True


def running() -> bool:
    """Whether this process's judge workers are up (started and not given up)."""
    return _pool is not None


def _give_up_processes() -> None:
    global _pool, _broken
    with _lock:
        _broken = True
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None


def judge_batch(batch: list[tuple[RawExchange, dict[str, Any], str]]) -> list[tuple[list[Violation], int | None]]:
    return [judge_record(raw, request, wire_name) for raw, request, wire_name in batch]


class Judge:
    """One level's judge (module rules). `await judge(raw, request, wire)` gives what
    `judge_record` gives. In processes, the exchanges that finish in one turn of the event loop go
    to a worker together (at most BATCH at a time): the pool moves each task through a thread and
    a pipe, which per exchange cost more than judging a short stream."""

    BATCH = 64

    def __init__(self, *, processes: bool) -> None:
        self.processes = processes
        self._pending: list[tuple[RawExchange, dict[str, Any], str, asyncio.Future]] = []

    async def __call__(self, raw: RawExchange, request: dict[str, Any],
                       wire: Dialect) -> tuple[list[Violation], int | None]:
        pool = _processes() if self.processes else None
        if pool is None:
            return await asyncio.to_thread(judge_record, raw, request, wire.name)
        loop = asyncio.get_running_loop()
        result = loop.create_future()
        self._pending.append((raw, request, wire.name, result))
        if len(self._pending) >= self.BATCH:
            self._flush(pool)
        elif len(self._pending) == 1:
            loop.call_soon(self._flush, pool)  # after every exchange that finishes in this turn
        return await result

    def _flush(self, pool: ProcessPoolExecutor) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        asyncio.ensure_future(self._judge_batch(pool, batch))

    async def _judge_batch(self, pool: ProcessPoolExecutor,
                           batch: list[tuple[RawExchange, dict[str, Any], str, asyncio.Future]]) -> None:
        work = [(raw, request, name) for raw, request, name, _ in batch]
        try:
            try:
                results = await asyncio.get_running_loop().run_in_executor(pool, judge_batch, work)
            except BrokenProcessPool:
                _give_up_processes()
                results = await asyncio.to_thread(judge_batch, work)
        except BaseException as exc:  # noqa: BLE001 - every waiter gets the failure
            for *_, result in batch:
                if not result.done():
                    result.set_exception(exc)
            return
        for (*_, result), judged in zip(batch, results, strict=True):
            if not result.done():
                result.set_result(judged)
