"""Fixtures of the loop self-tests: the reference engine in-process, one per fault set."""

from __future__ import annotations

import contextlib

import pytest


@contextlib.contextmanager
def engine(*faults: str, model: str = "reference-model"):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=tuple(faults), model=model) as url:
        yield url


@pytest.fixture(scope="module")
def conformant_engine():
    with engine() as url:
        yield url


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "loop: agent-loop scenarios driven to completion")
    config.addinivalue_line("markers", "live: drives the real Claude Code / opencode CLIs (opt-in: -m live)")


def pytest_collection_modifyitems(config, items) -> None:
    """Live tests here are opt-in like the suite's: without -m they are deselected."""
    if config.getoption("markexpr", ""):
        return
    here = __import__("pathlib").Path(__file__).resolve().parent
    drop = [i for i in items if i.get_closest_marker("live") and here in __import__("pathlib").Path(str(i.path)).resolve().parents]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if i not in drop]
