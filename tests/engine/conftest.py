"""Fixtures of the engine self-tests: the reference engine in-process (one per fault set)."""

from __future__ import annotations

import contextlib

import pytest

from conformance.engine.launch import serve_engine_in_thread


@contextlib.contextmanager
def engine(*faults: str, **kw):
    with serve_engine_in_thread(faults=tuple(faults), **kw) as url:
        yield url


@pytest.fixture(scope="module")
def engine_url():
    with engine() as url:
        yield url
