"""report.html: built from the results record, self-contained, every target-supplied text escaped,
the matrix by check names and areas, failures with their commands, the plots only where figures
exist; and the real runs (conformance run, pytest under xdist) write it once."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.core.registry import registered as load_all
from conformance.core.results import Result, ResultsWriter
from conformance.plugin import SUITE_DIR
from conformance.report.baseline import Baseline
from conformance.report.html import render, write_html

load_all()
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _rec(test_id, check_id, outcome, **kw) -> Result:
    return Result(test_id=test_id, check_id=check_id, outcome=outcome, api="anthropic", **kw)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    p = _Tags()
    p.feed(html)
    return p.tags


def test_untrusted_text_is_escaped_everywhere(tmp_path):
    folder = tmp_path / "failures" / "t"
    folder.mkdir(parents=True)
    (folder / "reproduce.txt").write_text(f"conformance replay x --target {EVIL}\n")
    (folder / "curl.sh").write_text(f"curl -d '{EVIL}'\n")
    recs = [
        _rec("test_replay.py::test_replay[a]", "anthropic.stream.stop_sequence_present", "failed",
             message=EVIL, model=EVIL, client="claude-code", client_version=EVIL, case=EVIL,
             violations=[{"check_id": "anthropic.stream.stop_sequence_present", "message": EVIL, "expected": EVIL,
                          "seen": EVIL, "where": {"exchange": EVIL}, "severity": "error"}],
             artifacts=str(folder), versions={"engine": EVIL}),
        _rec("test_load.py::test_interference", "load.interference", "info",
             details={"short_latency_ratio": 1.2, "short_throughput_ratio": 1.1}),
        _rec("test_load.py::test_concurrency_ramp", "load.throughput", "info",
             details={"levels": [{"level": 1, "output_tokens_per_s": 10.0, "ttft_p50_s": 0.1, "ttft_p95_s": 0.2},
                                 {"level": 2, "output_tokens_per_s": EVIL, "ttft_p50_s": None, "ttft_p95_s": 0.3}]}),
    ]
    html = render(recs, {"target": EVIL, "model": EVIL, "engine": EVIL})
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    tags = _tags(html)
    assert [t for t, _ in tags].count("script") == 1  # the page's own script, nothing from the target
    assert not any(t == "img" for t, _ in tags)
    assert not any(k.startswith("on") for _, attrs in tags for k in attrs)
    # and the replay / curl commands read from the failure folder are escaped too
    assert "curl -d &#x27;&lt;script&gt;" in html


def test_self_contained_no_network_reference():
    recs = [_rec("t::a", "suite.request.accepted", "passed")]
    html = render(recs, {"target": "http://127.0.0.1:1"})
    assert "default-src 'none'" in html  # the page forbids every fetch
    refs = re.findall(r'(?:src|href)="([^"#][^"]*)"', html)
    assert refs == [], refs
    assert "<style>" in html and "<script>" in html


def test_matrix_names_checks_by_area_with_hover_and_layer(tmp_path):
    recs = [
        _rec("test_replay.py::test_replay[a]", "anthropic.stream.stop_sequence_present", "failed", layer="engine",
             client="claude-code", client_version="2.1.197", case="default", message="missing",
             violations=[{"check_id": "anthropic.stream.stop_sequence_present", "message": "missing",
                          "expected": "'stop_sequence' present", "seen": "keys ['stop_reason']",
                          "where": {"event_index": 61, "event_type": "message_delta"}, "severity": "error"}]),
        _rec("test_replay.py::test_replay[a]", "suite.request.accepted", "passed", client="claude-code",
             client_version="2.1.197", case="default"),
        _rec("test_replay.py::test_replay[b]", "tools.call.offered", "failed", client="opencode",
             client_version="1.18.33", case="tool-loop", message="named an unoffered tool"),
        _rec("test_replay.py::test_replay[b]", "suite.stream.incremental", "unverifiable", client="opencode",
             client_version="1.18.33", case="tool-loop"),
        _rec("test_replay.py::test_replay[c]", "suite.stream.wellformed", "warning", case="c"),
    ]
    baseline = Baseline({"test_replay.py::test_replay[b]": {"tools.call.offered": "router bug #12, fixed in 1.2"}})
    html = render(recs, {"target": "t"}, baseline=baseline, report_dir=tmp_path)
    areas = re.findall(r'<th class="area" colspan="(\d+)">([a-z]+)</th>', html)
    assert [a for _, a in areas] == ["anthropic", "suite", "tools"]
    assert dict((a, int(n)) for n, a in areas)["suite"] == 3 + 1  # its checks and the row-name column
    # the header cells are names, not c1..cN, with the registry's text on hover
    assert '<span>stream.stop_sequence_present</span>' in html and ">c1<" not in html
    assert 'title="anthropic.stream.stop_sequence_present: message_delta.delta carries stop_sequence' in html
    # failing cells name the layer and link to an expandable failure
    assert re.search(r'<td class="failed"[^>]*><a href="#f-\d+" data-open="f-\d+">FAIL</a><br>'
                     r'<small class="layer">engine</small>', html)
    assert re.search(r'<td class="xfail"[^>]*title="[^"]*router bug #12', html)
    assert "xfail (baseline)" in html and ">unverifiable<" in html and ">warning<" in html
    details = re.findall(r'<details class="failure" id="f-\d+">.*?</details>', html)
    assert len(details) == 2
    first = next(d for d in details if "stop_sequence_present" in d)
    for part in ("expected", "seen", "where", "likely cause", "event_index 61"):
        assert part in first, part


def test_plots_follow_the_figures():
    none = render([_rec("t::a", "suite.request.accepted", "passed")], {})
    assert 'class="plot"' not in none  # no figures, no empty plots
    levels = [{"level": 1, "output_tokens_per_s": 100.0, "ttft_p50_s": 0.1, "ttft_p95_s": 0.2},
              {"level": 2, "output_tokens_per_s": 180.0, "ttft_p50_s": 0.12, "ttft_p95_s": 0.3},
              {"level": 4, "output_tokens_per_s": 190.0, "ttft_p50_s": 0.2, "ttft_p95_s": 0.5, "client_limited": True,
               "client_limited_by": "client CPU 97% <busy>"},
              {"level": 8, "output_tokens_per_s": None, "ttft_p50_s": None, "ttft_p95_s": None}]
    recs = [
        _rec("test_load.py::test_concurrency_ramp", "load.throughput", "info", details={"levels": levels}),
        _rec("test_load.py::test_concurrency_ramp", "load.concurrency_acceptance", "failed",
             details={"levels": levels, "broke_at": 8}),
        _rec("test_context.py::test_needle", "context.needle_recall", "info", details={"points": [
            {"fraction": 0.5, "depth": 0.0, "counted_tokens": 500, "outcome": "hit"},
            {"fraction": 0.5, "depth": 1.0, "counted_tokens": 500, "outcome": "miss"},
            {"fraction": 0.9, "depth": 0.0, "counted_tokens": 900, "outcome": "cut"}]}),
        _rec("test_context.py::test_advertised_matches", "context.advertised_matches", "failed",
             details={"advertised": 1000, "at_99pct": {"tokens": 990, "status": 400}, "accepted_about": 700}),
        _rec("test_load.py::test_interference", "load.long_context_parallel", "passed",
             details={"parallel": 3, "latency_ratio": 2.5}),
    ]
    html = render(recs, {})
    plots = dict(re.findall(r'<svg class="plot" data-plot="([^"]+)"(.*?)</svg>', html))
    assert set(plots) == {"throughput", "ttft", "needle", "interference", "context"}
    assert 'class="mark"' in plots["throughput"] and "broke at 8" in plots["throughput"]
    assert plots["throughput"].count('class="client-limited"') == 1 and "client-limited" in plots["ttft"]
    assert "client-limited at 4: client CPU 97% &lt;busy&gt;" in plots["throughput"]
    assert plots["ttft"].count("<polyline") == 2  # p50 and p95
    assert plots["needle"].count('class="cell"') == 4 and "rgb(" in plots["needle"] and "#ccc" in plots["needle"]
    assert "accepted at most" in plots["context"] and "99% sent: HTTP 400" in plots["context"]


def test_conformance_run_writes_report_html(faulty_run):
    html = (faulty_run / "report.html").read_text(encoding="utf-8")
    assert "Conformance report" in html and "--fault stop-sequence-missing" in html
    assert "<span>stream.stop_sequence_present</span>" in html
    assert re.search(r'<details class="failure" id="f-1">', html)
    # the failure folder link is relative to the report, so the folder can be moved or attached
    assert 'href="failures/claude-code/' in html
    assert "conformance replay" in html and "curl" in html
    assert (faulty_run / "results" / "run.json").is_file()


def test_xdist_controller_writes_it_once(tmp_path):
    from conformance.engine.launch import serve_engine_in_thread
    from tests.report.conftest import SMALL

    with serve_engine_in_thread() as url:
        proc = subprocess.run([sys.executable, "-m", "pytest", f"--target={url}", f"--conformance-captures={SMALL}",
                               str(SUITE_DIR / "test_replay.py"), "-n", "2", "-p", "no:cacheprovider", "-q"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    reports = tmp_path / "reports"
    workers = sorted(p.name for p in (reports / "results").glob("results-*.jsonl"))
    assert workers and all(w.startswith("results-gw") for w in workers)
    html = (reports / "report.html").read_text(encoding="utf-8")
    # every worker's records are in the one page
    assert "claude-code/2.1.197/tool-loop-small" in html and "opencode/" in html
    assert proc.stdout.count("report: ") == 1


def test_write_html_without_results_is_none(tmp_path):
    assert write_html(tmp_path, {}) is None
    ResultsWriter(tmp_path / "results").write(_rec("t::a", "suite.request.accepted", "passed"))
    assert Path(write_html(tmp_path, {})).name == "report.html"


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_record(n):
    recs = [_rec("t::a", "suite.request.accepted", "passed")][:n]
    html = render(recs, {})
    assert ("No results were recorded" in html) == (n == 0)
