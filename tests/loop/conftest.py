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
