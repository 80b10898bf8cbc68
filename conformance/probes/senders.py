"""Sender processes: a load level's slots split across the machine's cores.

Rules:
- One process sends from one event loop and judges under one interpreter lock: past a few
  dozen streams the probe, not the target, sets the pace (benchmarks/bench_load.py). A level of
  at least `SPLIT_FROM` requests is therefore split: each of `process_count()` sender processes
  (one per core) runs a share of the level's slots over a share of its requests, sends, judges
  in its own threads and measures its own client load, and the level's records are the union
  (`conformance.probes.load.run_level`). A smaller level runs in the probe's own process, since
  starting the senders (~0.3 s) costs more than it saves there.
- The senders are started once per process, on first use, with the `spawn` start method (the
  probe's process has threads; forking it could copy a held lock), reused by every later level
  and probe, and stopped at exit (they also exit when their pipe closes). One split level runs
  at a time in a process (`split_slot()`); another that asks meanwhile runs unsplit.
- Each sender has a pipe and one feeding thread here: a job is a module-level function and its
  arguments (pickled by reference), its answer the function's result or the exception it
  raised, which is raised again here. A sender that dies (killed, out of memory) raises
  `SenderGone`; the caller runs the level unsplit and no later level is split.
- Fail fast across processes: the senders share one flag (`broken()`, a process-shared event
  handed to them when they start): a sender whose share breaks sets it, every sender checks it
  before each request, the way the one-process level checks its own.
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

SPLIT_FROM = 64  # requests in a level from which it is split across sender processes

_shared_flag: Any = None  # in a sender: the process-shared "the level broke" event


def _sender_main(conn, flag) -> None:
    """A sender process: run each job that arrives, answer with its result (or its exception)."""
    global _shared_flag
    _shared_flag = flag
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return  # the probe's process is gone
        try:
            answer: Any = ("ok", fn(*args))
        except Exception as exc:  # noqa: BLE001 - raised again in the caller
            answer = ("raised", exc)
        conn.send(answer)


def broken() -> Any:
    """In a sender: the shared fail-fast flag (`is_set()`, `set()`)."""
    if _shared_flag is None:
        raise RuntimeError("broken() is for code running in a sender process")
    return _shared_flag


def ready() -> int:
    return os.getpid()


class SenderGone(Exception):
    """A sender process died or its pipe broke."""


class _Sender:
    """One sender process, its pipe, and the thread in this process that feeds it."""

    def __init__(self, ctx, flag) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_sender_main, args=(child, flag), daemon=True,
                                   name="conformance-sender")
        self.process.start()
        child.close()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._feed, daemon=True, name="conformance-sender-feed")
        self.thread.start()

    def submit(self, fn: Callable, args: tuple, done: Callable[[str, Any], None]) -> None:
        self.jobs.put((fn, args, done))

    def _feed(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            fn, args, done = job
            try:
                self.conn.send((fn, args))
                kind, value = self.conn.recv()
            except (EOFError, OSError) as exc:
                kind, value = "gone", SenderGone(f"a sender process stopped: {exc!r}")
            done(kind, value)

    def stop(self) -> None:
        self.jobs.put(None)
        self.conn.close()
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()


_lock = threading.Lock()
_split_running = threading.Lock()
_senders: list[_Sender] | None = None
_flag: Any = None
_given_up = False


def process_count() -> int:
    return os.cpu_count() or 1


def _stop_all() -> None:
    for sender in _senders or ():
        sender.stop()


def _pool() -> list[_Sender] | None:
    global _senders, _flag
    with _lock:
        if _senders is None and not _given_up and process_count() > 1:
            ctx = multiprocessing.get_context("spawn")
            _flag = ctx.Event()
            _senders = [_Sender(ctx, _flag) for _ in range(process_count())]
            atexit.register(_stop_all)
        return _senders


def give_up() -> None:
    """No more split levels in this process (a sender died)."""
    global _senders, _given_up
    with _lock:
        _given_up, senders, _senders = True, _senders, None
    for sender in senders or ():
        sender.stop()


def _call_all_blocking(jobs: list[tuple[Callable, tuple]], timeout: float | None) -> list[tuple[str, Any]]:
    senders = _pool()
    if senders is None or len(jobs) > len(senders):
        raise SenderGone("no sender processes")
    answers: list[tuple[str, Any] | None] = [None] * len(jobs)
    done = [threading.Event() for _ in jobs]
    for k, ((fn, args), sender) in enumerate(zip(jobs, senders, strict=False)):
        def finish(kind, value, k=k):
            answers[k] = (kind, value)
            done[k].set()
        sender.submit(fn, args, finish)
    for event in done:
        if not event.wait(timeout):
            raise SenderGone(f"a sender did not answer within {timeout:g} s")
    return [a for a in answers if a is not None]


async def call_all(jobs: list[tuple[Callable, tuple]], *, timeout: float | None = None) -> list[Any]:
    """Run job k on sender k, all at once; their results in order. Raises what a job raised, or
    SenderGone (then no later level is split)."""
    answers = await asyncio.to_thread(_call_all_blocking, jobs, timeout)
    results = []
    for kind, value in answers:
        if kind == "gone":
            give_up()
            raise value
        if kind == "raised":
            raise value
        results.append(value)
    return results


def start() -> bool:
    """Start the senders now and wait until each has imported the probe (a level that will be
    split calls this before its clock starts). False when processes are not available."""
    try:
        _call_all_blocking([(ready, ())] * process_count(), 60)
    except SenderGone:
        give_up()
        return False
    return True


def running() -> bool:
    """Whether this process's sender processes are up (started and not given up)."""
    return _senders is not None


def clear_flag() -> None:
    if _flag is not None:
        _flag.clear()


def split_slot() -> threading.Lock:
    """Held while a split level runs (module rules: one at a time per process)."""
    return _split_running
