"""report.html draws the soak's figures over time, with the first failure marked."""

from __future__ import annotations

from conformance.core.results import Result
from conformance.probes.soak import SoakReport, SoakRequest, SoakSession
from conformance.report.html import render
from conformance.report.soak_plots import soak_plots


def _soak_result() -> Result:
    runs = [SoakSession(0, 0, "loop:a", 0.0, 9.0, False, "5xx",
                        [SoakRequest(0, 0, 1, 0.0, 0.1, 0.01, 0.5, 10, None),
                         SoakRequest(0, 0, 2, 7.0, None, None, 0.1, 0, "5xx")])]
    outcome = SoakReport(10.0, 1, runs=runs, wall_s=10.0).outcome()
    return Result("suite::test_soak", outcome.check_id, outcome.outcome, details=outcome.details)


def test_soak_figures_are_drawn_with_the_first_failure_marked():
    plots = soak_plots([_soak_result()])
    assert len(plots) == 3 and all(p.startswith("<svg") for p in plots)
    assert all("first failure at 7.1 s" in p for p in plots)
    html = render([_soak_result()], {})
    assert "Soak: failed requests over time" in html


def test_no_soak_result_no_soak_figures():
    assert soak_plots([Result("t", "load.throughput", "info", details={"levels": []})]) == []
