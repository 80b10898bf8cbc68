"""The soak's figures over time for report.html: throughput, TTFT p95 and errors per time bucket.

Rules:
- Drawn only when the run recorded a `load.soak_stable` result with its `series` (the soak probe's
  figures, `conformance.probes.soak.SoakReport.series`); the latest such result is drawn.
- The time of the first failure is marked on every chart, so a reader sees what changed then.
- Charts go through the one SVG path (`conformance.report.svg.line_chart`).
"""

from __future__ import annotations

from typing import Any

from conformance.report import svg

SOAK_CHECK = "load.soak_stable"


def soak_plots(results: list[Any]) -> list[str]:
    recs = [r for r in results if r.check_id == SOAK_CHECK and isinstance(r.details, dict)
            and isinstance(r.details.get("series"), list) and r.details["series"]]
    if not recs:
        return []
    details = recs[-1].details
    rows = [row for row in details["series"] if isinstance(row, dict) and svg.number(row.get("t_s")) is not None]
    if not rows:
        return []
    first = svg.number(details.get("first_failure_s"))
    marks = [svg.Mark(first, f"first failure at {first:g} s")] if first is not None else []
    x = [float(row["t_s"]) for row in rows]

    def chart(name: str, title: str, y_label: str, key: str) -> str:
        series = [svg.Series(y_label, list(zip(x, [svg.number(row.get(key)) for row in rows], strict=True)))]
        return svg.line_chart(svg.LineChart(name, title, "seconds into the soak", y_label, series, marks))

    return [chart("soak-throughput", "Soak: throughput over time", "output tokens/s", "output_tokens_per_s"),
            chart("soak-ttft", "Soak: TTFT p95 over time", "seconds", "ttft_p95_s"),
            chart("soak-errors", "Soak: failed requests over time", "errors", "errors")]
