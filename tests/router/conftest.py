"""Fixtures for the reference router's own self-tests (real servers on loopback)."""

from __future__ import annotations

import pytest


@pytest.fixture
def engine_url():
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread() as url:
        yield url
