"""Snapshots of the normalised violation output for every invalid fixture (syrupy).

A change in wording, location or check id shows up as a snapshot diff to review; update
deliberately with `pytest tests/wire/test_wire_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import pytest
from wire_helpers import fixture_id, fixtures, judge, normalise

from conformance.report.text import format_failure


@pytest.mark.parametrize("f", fixtures(valid=False), ids=fixture_id)
def test_violation_output_snapshot(f, snapshot):
    violations, _ = judge(f)
    assert {"data": normalise(violations), "text": format_failure(f["file"], violations)} == snapshot
