"""Engines for the probe self-tests: in-thread for speed, subprocesses for faults that exit or hang."""

from __future__ import annotations

import pytest

from conformance.engine.launch import serve_engine_in_thread, spawn_engine
from conformance.net.transport import Deadlines
from conformance.probes.common import Target
from conformance.wire import ANTHROPIC

SMALL_CONTEXT = 4096  # small haystacks keep the context probes fast


@pytest.fixture
def engine():
    """engine(*faults, max_context=...) -> base URL of an in-thread engine (stopped at teardown)."""
    stack = []

    def start(*faults, max_context=SMALL_CONTEXT):
        cm = serve_engine_in_thread(faults=faults, max_context=max_context)
        url = cm.__enter__()
        stack.append(cm)
        return url

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


@pytest.fixture
def spawned():
    """spawned(*faults, max_context=...) -> EngineProcess (the real CLI in a subprocess)."""
    procs = []

    def start(*faults, max_context=SMALL_CONTEXT):
        args = [a for f in faults for a in ("--fault", f)] + ["--max-context", str(max_context)]
        ep = spawn_engine(*args)
        procs.append(ep)
        return ep

    yield start
    for ep in procs:
        ep.stop()


@pytest.fixture
def make_target():
    """make_target(url, wire=..., process=..., first_content=..., total=...) -> a probe Target."""

    def make(url, *, wire=ANTHROPIC, process=None, first_content=20.0, total=30.0) -> Target:
        return Target(url, wire=wire, process=process,
                      deadlines=Deadlines(connect=3.0, first_content=first_content, total=total))

    return make
