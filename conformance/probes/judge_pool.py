"""Judging a load level's exchanges on every core, not in the thread that sends them.

Rules:
- The load probe's event loop sends and reads; the judge (`check_exchange`) is CPU work. In
  threads it shares one interpreter lock with the loop, so past a few dozen streams the loop
  waits on the judge and the probe, not the target, sets the pace. A level of at least
  `PROCESSES_FROM` requests therefore judges in worker processes, one per core but one (the
  sending process keeps a core), while the loop goes on reading; a smaller level judges in a
  thread, since starting the workers (~0.3 s) costs more than it saves there.
- The workers are started once per process, on first use, with the `spawn` start method (the
  probe's process has threads; forking it could copy a held lock), reused by every later level
  and probe, and stopped at exit (they also exit when their pipe closes).
- Each worker has a pipe and one feeding thread in the sending process: the thread sends a batch,
  waits for its verdicts and hands them to the event loop. (A standard process pool moves every
  task through two more threads and a queue; measured in benchmarks/bench_load.py, that cost the
  sending process about as much CPU per exchange as sending it.) The exchanges that finish within
  GATHER_S of each other go as one batch (at most BATCH); a verdict comes at most GATHER_S later,
  and the sends never wait for it. Batches go to the worker with the fewest waiting.
- A worker runs the same function on the same bytes (`check_exchange(raw, request, wire=name)`;
  judging reads no process state), so a verdict is the same in a worker as in a thread
  (tests/probes/test_judge_pool.py compares them). Only what a load record keeps comes back:
  the violations and the output tokens. An exception the judge raises is raised to the waiter,
  as in a thread.
- A worker that dies (killed, out of memory) costs nothing but time: its batch and the rest of
  the process's levels are judged in threads, and the probe says nothing different.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.core.failures import Violation
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect

PROCESSES_FROM = 64  # requests in a level from which the judge runs in worker processes

Work = list[tuple[RawExchange, dict[str, Any], str]]
Judged = tuple[list[Violation], int | None]


def judge_record(raw: RawExchange, request: dict[str, Any], wire_name: str) -> Judged:
    """What a load record keeps of the judge's verdict: the violations and the output tokens."""
    verdict = check_exchange(raw, request, wire=wire_name)
    return list(verdict.violations), dialect(wire_name).output_tokens(verdict.message)


def judge_batch(batch: Work) -> list[Judged]:
    return [judge_record(raw, request, wire_name) for raw, request, wire_name in batch]


def _worker_main(conn) -> None:
    """A worker process: judge each batch that arrives, answer with its verdicts (or the exception)."""
    while True:
        try:
            work = conn.recv()
        except (EOFError, OSError):
            return  # the sending process is gone
        try:
            answer: Any = ("ok", judge_batch(work))
        except Exception as exc:  # noqa: BLE001 - raised again in the waiter, as in a thread
            answer = ("raised", exc)
        conn.send(answer)


class WorkerGone(Exception):
    """The worker process died or its pipe broke."""


class _Worker:
    """One judge process, its pipe, and the thread in this process that feeds it."""

    def __init__(self, ctx) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="conformance-judge")
        self.process.start()
        child.close()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.waiting = 0  # batches queued or in the worker (read and written under the module lock)
        self.thread = threading.Thread(target=self._feed, daemon=True, name="conformance-judge-feed")
        self.thread.start()

    def submit(self, work: Work, done: Callable[[str, Any], None]) -> None:
        with _lock:
            self.waiting += 1
        self.jobs.put((work, done))

    def _feed(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            work, done = job
            try:
                self.conn.send(work)
                kind, value = self.conn.recv()
            except (EOFError, OSError) as exc:
                kind, value = "gone", WorkerGone(f"a judge worker process stopped: {exc!r}")
            with _lock:
                self.waiting -= 1
            done(kind, value)

    def stop(self) -> None:
        self.jobs.put(None)
        self.conn.close()
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()


_lock = threading.Lock()
_workers: list[_Worker] | None = None
_broken = False


def worker_count() -> int:
    return max(1, (os.cpu_count() or 1) - 1)


def _stop_all() -> None:
    for worker in _workers or ():
        worker.stop()


def _pool() -> list[_Worker] | None:
    global _workers
    with _lock:
        if _workers is None and not _broken:
            ctx = multiprocessing.get_context("spawn")
            _workers = [_Worker(ctx) for _ in range(worker_count())]
            atexit.register(_stop_all)
        return _workers


def _give_up_processes() -> None:
    global _workers, _broken
    with _lock:
        _broken, workers, _workers = True, _workers, None
    for worker in workers or ():
        worker.stop()


def start() -> bool:
    """Start the workers now and wait until each has imported the judge (a level that will judge
    in processes calls this before its clock starts). False when processes are not available."""
    workers = _pool()
    if workers is None:
        return False
    answered = [threading.Event() for _ in workers]
    outcomes: list[str] = []
    for worker, event in zip(workers, answered, strict=True):
        worker.submit([], lambda kind, _value, event=event: (outcomes.append(kind), event.set()))
    if not all(event.wait(60) for event in answered) or any(kind != "ok" for kind in outcomes):
        _give_up_processes()
        return False
    return True


def running() -> bool:
    """Whether this process's judge workers are up (started and not given up)."""
    return _workers is not None


class Judge:
    """One level's judge (module rules): `await judge(raw, request, wire)` gives what
    `judge_record` gives, in a worker process when `processes`, else in a thread."""

    BATCH = 64
    GATHER_S = 0.005

    def __init__(self, *, processes: bool) -> None:
        self.processes = processes
        self._pending: list[tuple[RawExchange, dict[str, Any], str, asyncio.Future]] = []

    async def __call__(self, raw: RawExchange, request: dict[str, Any], wire: Dialect) -> Judged:
        workers = _pool() if self.processes else None
        if workers is None:
            return await asyncio.to_thread(judge_record, raw, request, wire.name)
        loop = asyncio.get_running_loop()
        result = loop.create_future()
        self._pending.append((raw, request, wire.name, result))
        if len(self._pending) >= self.BATCH:
            self._flush()
        elif len(self._pending) == 1:
            loop.call_later(self.GATHER_S, self._flush)
        return await result

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        workers = _pool()
        if workers is None:  # given up since: judge in a thread
            asyncio.ensure_future(self._in_thread(batch))
            return
        loop = asyncio.get_running_loop()
        worker = min(workers, key=lambda w: w.waiting)
        work = [(raw, request, name) for raw, request, name, _ in batch]
        worker.submit(work, lambda kind, value: loop.call_soon_threadsafe(self._deliver, batch, kind, value))

    def _deliver(self, batch, kind: str, value: Any) -> None:
        if kind == "gone":
            _give_up_processes()
            asyncio.ensure_future(self._in_thread(batch))
            return
        for index, (*_, result) in enumerate(batch):
            if result.done():
                continue
            if kind == "ok":
                result.set_result(value[index])
            else:
                result.set_exception(value)

    async def _in_thread(self, batch) -> None:
        for raw, request, name, result in batch:
            try:
                judged = await asyncio.to_thread(judge_record, raw, request, name)
            except Exception as exc:  # noqa: BLE001 - the waiter gets it, as in a thread
                if not result.done():
                    result.set_exception(exc)
                continue
            if not result.done():
                result.set_result(judged)
