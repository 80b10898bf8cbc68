"""The upgrade view and the version matrix, built from two generations' results records: what the
newest router release fixed, broke and changed, by check and layer, and the same check failing
for a new reason; the matrix page puts both releases side by side."""

from __future__ import annotations

from conformance.core.results import Result, ResultsWriter
from conformance.peers.stacks import by_name
from conformance.peers.upgrade import pair_view, render_markdown
from conformance.peers.version_matrix import build_version_matrix, column_order

PINNED, LATEST = by_name("ccr-engine"), by_name("ccr-next-engine")


def _write(folder, router, rows):
    w = ResultsWriter(folder / "results")
    for test, check, outcome, seen in rows:
        violations = [{"check_id": check, "message": "m", "seen": seen, "severity": "error",
                       "where": {"pointer": "/type"}}] if outcome == "failed" else []
        w.write(Result(test, check, outcome, api="anthropic", layer="router" if outcome == "failed" else "",
                       violations=violations, versions={"router": router}))


def _two_generations(tmp_path):
    _write(tmp_path / PINNED.name, "claude-code-router 2.0.0", [
        ("t.py::forced", "client_wire.schema.forced_call_answered", "failed", "HTTP 400"),
        ("t.py::parallel", "anthropic.stream.block_index", "passed", None),
        ("t.py::envelope", "anthropic.error.envelope", "failed", "HTTP 500")])
    _write(tmp_path / LATEST.name, "claude-code-router 3.1.1", [
        ("t.py::forced", "client_wire.schema.forced_call_answered", "passed", None),
        ("t.py::parallel", "anthropic.stream.block_index", "failed", "0"),
        ("t.py::envelope", "anthropic.error.envelope", "failed", "HTTP 400")])


def test_the_upgrade_view_lists_fixed_broke_and_new_reasons_by_check_and_layer(tmp_path):
    _two_generations(tmp_path)
    view = pair_view(tmp_path, PINNED, LATEST)
    assert view.moved["fixed"] == {("client_wire.schema.forced_call_answered", "router"): 1}
    assert view.moved["broke"] == {("anthropic.stream.block_index", "router"): 1}
    assert [(t, c) for t, c, _, _ in view.new_reasons] == [("t.py::envelope", "anthropic.error.envelope")]
    md = render_markdown([view])
    assert "claude-code-router 2.0.0 -> claude-code-router 3.1.1" in md
    assert "| fixed | `client_wire.schema.forced_call_answered` | router | 1 |" in md
    assert "status 500 /type status" in md and "status 400 /type status" in md


def test_a_pair_without_results_is_named_not_skipped(tmp_path):
    _write(tmp_path / PINNED.name, "claude-code-router 2.0.0", [("t.py::x", "suite.request.accepted", "passed", None)])
    view = pair_view(tmp_path, PINNED, LATEST)
    assert view.missing and LATEST.name in view.missing
    assert f"Not compared: {view.missing}" in render_markdown([view])


def test_the_version_matrix_puts_both_releases_side_by_side(tmp_path):
    _two_generations(tmp_path)
    page = build_version_matrix(tmp_path)
    assert page.index("claude-code-router 2.0.0") < page.index("claude-code-router 3.1.1")
    assert "<script" not in page and "FAIL 1/1" in page and "ok 1" in page
    names = [s.name for s in column_order()]
    assert names.index("ccr-next-engine") == names.index("ccr-engine") + 1
