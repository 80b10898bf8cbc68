"""Shared fixtures for the layer self-tests (hop, attribution, the attribution matrix): real
servers on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.engine.launch import serve_engine_in_thread

sys.path.insert(0, str(Path(__file__).resolve().parent))  # router_stack helper


@pytest.fixture
def engine_url():
    with serve_engine_in_thread() as url:
        yield url
