"""The peer matrix is built from results records: counts per stack x check, known failures marked."""

from __future__ import annotations

import json

from conformance.core.results import Result, ResultsWriter
from conformance.peers.matrix import build_matrix
from conformance.peers.stacks import Stack


def test_matrix_counts_outcomes_and_marks_known(tmp_path):
    a = Stack("stack-a", "anthropic", ("captures", "router", "engine"), "reference", router="litellm")
    b = Stack("stack-b", "openai", ("captures", "engine"), "reference")
    w = ResultsWriter(tmp_path / "stack-a" / "results")
    w.write(Result("t.py::x", "anthropic.stream.stop_sequence_present", "failed", layer="router"))
    w.write(Result("t.py::y", "anthropic.stream.stop_sequence_present", "passed"))
    w.write(Result("t.py::x", "tools.call_structured", "passed"))
    wb = ResultsWriter(tmp_path / "stack-b" / "results")
    wb.write(Result("t.py::x", "tools.call_structured", "passed"))
    wb.write(Result("t.py::x", "suite.stream.incremental", "unverifiable"))
    fixtures = tmp_path / "fx"
    fixtures.mkdir()
    (fixtures / "stack-a.json").write_text(json.dumps({"known_failures": [
        {"test": "t.py::x", "checks": ["anthropic.stream.stop_sequence_present"]}]}))
    md = build_matrix(tmp_path, [a, b], {"litellm": "1.0"}, [{"stack": "stack-a", "exit_code": 0, "seconds": 3}],
                      fixtures=fixtures)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines() if line.startswith("| ")}
    assert "FAIL 1/2*" in rows["anthropic.stream.stop_sequence_present"]
    assert rows["tools.call_structured"].endswith("| ok 1 | ok 1 |")
    assert "unverifiable 1" in rows["suite.stream.incremental"]
    assert "| litellm | 1.0 |" in md
    assert "anthropic.stream.stop_sequence_present -> router (1)" in md
