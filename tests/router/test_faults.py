"""The router's fault names (conformance/router/faults.py)."""

from __future__ import annotations

import pytest

from conformance.router.faults import ROUTER_FAULTS, validate


def test_unknown_fault_is_refused_with_the_list():
    with pytest.raises(ValueError, match="known router faults"):
        validate(["no-such-fault"])
    assert validate(list(ROUTER_FAULTS)) == tuple(ROUTER_FAULTS)
