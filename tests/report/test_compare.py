"""`conformance report compare`: exactly the verdicts that changed, by check and layer; figures as
ratios; different APIs refused; differing settings named; which phase moved beyond the spread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.core.results import Result, ResultsWriter, read_results
from conformance.core.verdict import RANK
from conformance.report.compare import (
    CompareError,
    compare,
    is_quiet,
    load_run,
    render_html,
    render_markdown,
    write_run_settings,
)

BAD = ("failed", "error")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "report", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _worst(folder: Path) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for r in read_results(folder / "results"):
        key = (r.test_id, r.check_id)
        if key not in out or RANK[r.outcome] > RANK[out[key]]:
            out[key] = r.outcome
    return out


def test_clean_vs_engine_fault_lists_exactly_the_changed_verdicts(clean_run, faulty_run, tmp_path):
    c = compare(load_run(clean_run), load_run(faulty_run))
    a, b = _worst(clean_run), _worst(faulty_run)
    tests_in_both = {k[0] for k in a} & {k[0] for k in b}
    expected = {k for k in a.keys() & b.keys() if a[k] != b[k]}
    expected |= {k for k in b.keys() - a.keys() if k[0] in tests_in_both and b[k] in BAD}
    expected |= {k for k in a.keys() - b.keys() if k[0] in tests_in_both and a[k] in BAD}
    got = {(f.test_id, f.check_id) for f in c.flips}
    assert got == expected and got
    # the fault's own check is among them, and every new failure reads "broke"
    assert any(f.check_id == "anthropic.stream.stop_sequence_present" and f.direction == "broke" for f in c.flips)
    assert all(f.direction == "broke" for f in c.flips if f.after in BAD)
    assert all(f.layer for f in c.flips)
    assert ("engine", "", "") not in c.versions_differ
    assert any(k == "engine" and "--fault stop-sequence-missing" in vb for k, _va, vb in c.versions_differ)
    # the reverse direction reads "fixed"
    back = compare(load_run(faulty_run), load_run(clean_run))
    assert {(f.test_id, f.check_id) for f in back.flips} == got
    assert all(f.direction == "fixed" for f in back.flips if f.before in BAD)
    # the command writes both forms
    proc = _cli("compare", str(clean_run), str(faulty_run), "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "cmp" / "compare.md").read_text()
    loud = [f for f in c.flips if not is_quiet(f)]
    assert f"Verdicts that flipped ({len(loud)}; " in md and "| broke |" in md
    assert "<table>" in (tmp_path / "cmp" / "compare.html").read_text()


def _run_folder(root: Path, name: str, api: str, *, salt: bool = False, outcome: str = "passed",
                message: str = "", details: dict | None = None) -> Path:
    folder = root / name
    ResultsWriter(folder / "results").write(Result(
        test_id="test_replay.py::test_replay[x]", check_id="suite.request.accepted", outcome=outcome, api=api,
        message=message, details=details or {}))
    write_run_settings(folder / "results", {"target": "t", "markers": ""},
                       {"api": api, "salt": salt, "deadline_total": 180.0, "model_map": {}})
    return folder


def test_runs_of_different_apis_are_refused(tmp_path):
    a = _run_folder(tmp_path, "a", "anthropic")
    b = _run_folder(tmp_path, "b", "openai")
    with pytest.raises(CompareError, match="different APIs.*anthropic.*openai"):
        compare(load_run(a), load_run(b))
    proc = _cli("compare", str(a), str(b), cwd=tmp_path)
    assert proc.returncode == 2
    assert "tested different APIs" in proc.stderr and "same API" in proc.stderr
    proc = _cli("compare", str(a), str(tmp_path / "nowhere"), cwd=tmp_path)
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_settings_that_differ_are_named_and_figures_are_ratios(tmp_path):
    a = _run_folder(tmp_path, "a", "anthropic", details={"latency_s": 2.0, "nested": {"tokens": 100}})
    b = _run_folder(tmp_path, "b", "anthropic", salt=True, outcome="failed", message="<script>x</script>",
                    details={"latency_s": 3.0, "nested": {"tokens": 50}})
    c = compare(load_run(a), load_run(b))
    assert ("salt", False, True) in c.settings_differ
    ratios = {f.figure: f.ratio for f in c.figures}
    assert ratios == {"latency_s": 1.5, "nested.tokens": 0.5}
    html = render_html(c)
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    md = render_markdown(c)
    assert "| salt | False | True |" in md and "| broke |" in md


def _phase_run(root: Path, name: str, prefill: list[float], decode: list[float]) -> Path:
    def point(x, label, values):
        ordered = sorted(values)
        return {"x": x, "label": label, "values": values, "repeats": len(values), "min": ordered[0],
                "median": ordered[len(ordered) // 2], "max": ordered[-1], "seen_once": len(values) < 2}

    folder = root / name
    w = ResultsWriter(folder / "results")
    w.write(Result(test_id="test_perf.py::test_prefill_rate", check_id="load.phase.prefill_rate", outcome="info",
                   api="anthropic", details={"points": [point(256, "256 tokens", prefill)]}))
    w.write(Result(test_id="test_perf.py::test_decode_rate", check_id="load.phase.decode_rate", outcome="info",
                   api="anthropic", details={"points": [point(1, "single stream", decode)]}))
    return folder


def test_phase_verdicts_and_seen_once(tmp_path):
    a = _phase_run(tmp_path, "a", [1000, 1010, 990], [50, 51, 49])
    b = _phase_run(tmp_path, "b", [1005, 995, 1002], [25, 26, 25])
    c = compare(load_run(a), load_run(b))
    verdicts = {p.check_id: p.verdict for p in c.phases}
    assert verdicts == {"load.phase.prefill_rate": "unchanged within the spread",
                        "load.phase.decode_rate": "moved down"}
    md = render_markdown(c)
    assert "- decode: moved down beyond the spread" in md and "- prefill: unchanged within the spread" in md
    once = _phase_run(tmp_path, "once", [2000], [100])
    c = compare(load_run(a), load_run(once))
    assert {p.verdict for p in c.phases} == {"seen once: not a result"}
    assert "moved" not in " ".join(p.verdict for p in c.phases)


def test_report_html_rerenders_a_copied_report_folder(faulty_run, tmp_path):
    import shutil

    copy = tmp_path / "copied"
    shutil.copytree(faulty_run, copy)
    (copy / "report.html").unlink()
    proc = _cli("html", str(copy), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    html = (copy / "report.html").read_text()
    assert "--fault stop-sequence-missing" in html and "<span>stream.stop_sequence_present</span>" in html
    proc = _cli("html", str(tmp_path / "empty-nothing"), cwd=tmp_path)
    assert proc.returncode == 2 and "no results/ folder" in proc.stderr
    proc = _cli(cwd=tmp_path)
    assert proc.returncode == 2 and "report compare RUN_A RUN_B" in proc.stderr


def _records_run(root: Path, name: str, facts: dict, records: list[tuple[str, str, str, str, dict]]) -> Path:
    """A run folder of (test, check, outcome, layer, details) records and its run.json."""
    folder = root / name
    w = ResultsWriter(folder / "results")
    for test, check, outcome, layer, details in records:
        w.write(Result(test_id=test, check_id=check, outcome=outcome, api="anthropic", layer=layer,
                       message=f"{check} {outcome}", details=details))
    write_run_settings(folder / "results", {"target": "t", "markers": "", **facts},
                       {"api": "anthropic", "salt": False, "deadline_total": 180.0, "model_map": {}})
    return folder


def test_what_changed_leads_ranked_and_leaves_out_could_not_tell_flips(tmp_path):
    a = _records_run(tmp_path, "a", {"engine": "reference"}, [
        ("t::loop", "loop.completed", "passed", "", {"rng_seed": 7, "turns": 3}),
        ("t::x", "suite.stream.incremental", "passed", "", {}),
        ("t::y", "tools.call.offered", "failed", "engine", {}),
        ("t::z", "suite.stop_sequence.honoured", "passed", "", {}),
        ("t::w", "anthropic.stream.stop_sequence_present", "passed", "", {})])
    b = _records_run(tmp_path, "b", {"router": "litellm 1.0"}, [
        ("t::loop", "loop.completed", "passed", "", {"rng_seed": 8, "turns": 3}),
        ("t::x", "suite.stream.incremental", "unverifiable", "", {}),
        ("t::y", "tools.call.offered", "passed", "", {}),
        ("t::z", "suite.stop_sequence.honoured", "warning", "", {}),
        ("t::w", "anthropic.stream.stop_sequence_present", "failed", "router", {})])
    c = compare(load_run(a), load_run(b))
    md = render_markdown(c)
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[0] == "## What changed, most severe first", sections
    headline = md.split("## What changed, most severe first", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in headline.splitlines() if line.startswith("| ") and "---" not in line][1:]
    # broke (a failure, router) first, then fixed, then a warning; passed -> unverifiable is left out
    assert [r.split(" | ")[0].strip("| ") for r in rows] == ["broke", "fixed", "changed"], rows
    assert "anthropic.stream.stop_sequence_present" in rows[0] and "suite.stream.incremental" not in headline
    assert "1 only between passed and unverifiable" in md
    # the seed is a setting, never a figure; the kind of stack differs, so settings are not "None"
    assert not any("rng_seed" in f.figure for f in c.figures)
    settings = {name: (va, vb) for name, va, vb in c.settings_differ}
    assert settings["seeds (rng_seed) of 1 test(s)"] == ("t::loop=7", "t::loop=8")
    assert settings["stack"] == ("engine (reference)", "router (litellm 1.0)")
    assert "## Settings that differ\n\nNone." not in md


def test_a_run_without_settings_is_not_said_to_have_none_that_differ(tmp_path):
    a = _records_run(tmp_path, "a", {}, [("t::x", "suite.request.accepted", "passed", "", {})])
    b = _records_run(tmp_path, "b", {}, [("t::x", "suite.request.accepted", "passed", "", {})])
    (b / "results" / "run.json").unlink()
    md = render_markdown(compare(load_run(a), load_run(b)))
    settings = md.split("## Settings that differ", 1)[1].split("\n## ", 1)[0]
    assert "None." not in settings and "(not recorded)" in settings, settings


def test_compare_into_a_closed_pipe_exits_quietly(tmp_path):
    a = _run_folder(tmp_path, "a", "anthropic")
    b = _run_folder(tmp_path, "b", "anthropic", outcome="failed", message="x" * 200)
    cmd = (f"{sys.executable} -m conformance.cli report compare {a} {b} --out {tmp_path / 'cmp'} | head -1")
    proc = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "# Conformance comparison"
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_a_loopback_target_is_the_same_target_whatever_its_port():
    """A server started for one run (the embedded engine, a test's router) gets whatever port was
    free: that is not a setting that differs; another host or path is."""
    from conformance.report.compare import _target_identity
    assert _target_identity("http://127.0.0.1:38057") == _target_identity("http://127.0.0.1:42459/")
    assert _target_identity("http://127.0.0.1:4000") != _target_identity("http://127.0.0.1:4000/litellm")
    assert _target_identity("http://router-a:4000") != _target_identity("http://router-b:4000")
