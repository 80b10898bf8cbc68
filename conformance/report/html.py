"""reports/report.html: one self-contained page (header, matrix, failures, plots) from the results record.

Rules:
- Built only from the results record (`conformance.core.results`) and what its records point to
  (a failure record's `artifacts` folder holds the replay and curl commands); never re-derives a
  verdict. The one optional extra is the baseline: a failing cell the baseline lists for that
  test is shown as "xfail (baseline)" with its reason.
- One file, opened from disk: styles and the small script are inline, nothing is fetched, plots
  are inline SVG (`conformance.report.svg`).
- Everything that can come from the target or a capture (messages, expected/seen, model names,
  versions, figures' text) is untrusted: it passes through `esc` (HTML escaping, quotes too) or
  the SVG module's `xml_text`; the only raw text inserted is this module's own markup.
- The page opens with one verdict per client x wire and the root causes (`conformance.report.headline`,
  `conformance.report.causes`); the failures below are grouped under their cause.
- The matrix: one table per area, rows are captures / scenarios / tests (`summary.row_of`),
  columns are check names written upright in rotated header cells (never broken letter by letter) (the id without its area, the registry's title and description on hover); a
  cell is the worst outcome (the order of `summary.matrix`); a failing cell names its layer
  (router / engine / both / model, or "unattributed" when no attribution was made) and links to
  the failure, which opens on click (`<details>`, also opened by the URL's #fragment).
- Plots appear only for figures the run recorded: throughput and TTFT p50/p95 vs concurrency
  (break level marked, client-limited levels hatched when a level says `client_limited`), the
  needle-recall grid, interference ratios, context advertised vs accepted, phase figures.
"""

from __future__ import annotations

import time
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

from conformance.core.registry import lookup
from conformance.core.results import Result, read_results
from conformance.core.secrets import scrub_text
from conformance.core.verdict import RANK
from conformance.report import svg
from conformance.report.causes import Cause, answered_models, from_results
from conformance.report.headline import causes_html, headline_html
from conformance.report.soak_plots import soak_plots
from conformance.report.summary import row_of

LABEL = {"failed": "FAIL", "error": "ERROR", "warning": "warning", "unverifiable": "unverifiable",
         "passed": "ok", "info": "info", "skipped": "skipped", "xfail": "xfail (baseline)"}


def esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _area(check_id: str) -> str:
    return check_id.split(".", 1)[0]


def _name(check_id: str) -> str:
    return check_id.split(".", 1)[1] if "." in check_id else check_id


def _hover(check_id: str) -> str:
    spec = lookup(check_id)
    if spec is None:
        return check_id
    text = spec.title if spec.description in ("", spec.title) else f"{spec.title} — {spec.description}"
    return f"{check_id}: {text}"


# ----------------------------------------------------------------------------- the matrix
class Matrix:
    """Cells (row, check) -> worst outcome, with the failing record kept for its details."""

    def __init__(self, results: list[Result], baseline: Any = None) -> None:
        self.cells: dict[tuple[str, str], str] = {}
        self.failing: dict[tuple[str, str], Result] = {}
        self.xfail_reason: dict[tuple[str, str], str] = {}
        for r in results:
            key = (row_of(r), r.check_id)
            if key not in self.cells or RANK[r.outcome] > RANK[self.cells[key]]:
                self.cells[key] = r.outcome
            if r.outcome in ("failed", "error") and key not in self.failing:
                self.failing[key] = r
        if baseline is not None:
            for key, r in self.failing.items():
                reason = baseline.for_test(r.test_id).get(r.check_id)
                if reason is not None:
                    self.cells[key] = "xfail"
                    self.xfail_reason[key] = reason or "listed in the baseline"
        self.rows = sorted({k[0] for k in self.cells})
        by_area: dict[str, list[str]] = defaultdict(list)
        for c in sorted({k[1] for k in self.cells}):
            by_area[_area(c)].append(c)
        self.areas = dict(sorted(by_area.items()))


def _layer(r: Result) -> str:
    return r.layer if r.layer and r.layer != "unknown" else "unattributed"


def _matrix_html(m: Matrix, anchors: dict[tuple[str, str], str]) -> str:
    """One table per area (its rows only those the area judged), check names written upright in
    rotated header cells: a name is never broken letter by letter and a table stays narrow."""
    if not m.rows:
        return '<div id="matrix"><p>No results were recorded.</p></div>'
    out = ['<div id="matrix">']
    for area, checks in m.areas.items():
        rows = [row for row in m.rows if any((row, c) in m.cells for c in checks)]
        out.append(f'<div class="scroll"><table class="matrix" data-area="{esc(area)}"><thead><tr>'
                   f'<th class="area" colspan="{len(checks) + 1}">{esc(area)}</th></tr><tr>'
                   '<th class="corner">capture / scenario / test</th>')
        for c in checks:
            out.append(f'<th class="check" title="{esc(_hover(c))}"><span>{esc(_name(c))}</span></th>')
        out.append("</tr></thead><tbody>")
        for row in rows:
            out.append(f'<tr><th class="row">{esc(row)}</th>')
            out += [_cell_html(m, anchors, row, c) for c in checks]
            out.append("</tr>")
        out.append("</tbody></table></div>")
    out.append("</div>")
    return "".join(out)


def _cell_html(m: Matrix, anchors: dict[tuple[str, str], str], row: str, c: str) -> str:
    outcome = m.cells.get((row, c))
    if outcome is None:
        return '<td class="none"></td>'
    text = esc(LABEL.get(outcome, outcome))
    rec = m.failing.get((row, c))
    title = f"{row} — {c}: {LABEL.get(outcome, outcome)}"
    if outcome == "xfail":
        title += f" ({m.xfail_reason[(row, c)]})"
    if rec is not None and (row, c) in anchors:
        cls = "xfail" if outcome == "xfail" else outcome
        return (f'<td class="{cls}" title="{esc(title)}"><a href="#{anchors[(row, c)]}" '
                f'data-open="{anchors[(row, c)]}">{text}</a><br><small class="layer">{esc(_layer(rec))}</small></td>')
    return f'<td class="{esc(outcome)}" title="{esc(title)}">{text}</td>'


# ----------------------------------------------------------------------------- failures
def _folder_file(folder: str, name: str) -> str:
    if not folder:
        return ""
    path = Path(folder) / name
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:8000] if path.is_file() else ""
    except OSError:
        return ""


def _link(folder: str, report_dir: Path | None) -> str:
    if not folder:
        return ""
    path = Path(folder)
    if report_dir is not None:
        try:
            return path.resolve().relative_to(Path(report_dir).resolve()).as_posix() + "/"
        except ValueError:
            pass
    return path.resolve().as_uri() + "/"


def _failure_html(anchor: str, key: tuple[str, str], r: Result, m: Matrix, report_dir: Path | None) -> str:
    spec = lookup(r.check_id)
    status = m.cells.get(key, r.outcome)
    head = (f'<summary><b class="{esc("xfail" if status == "xfail" else "failed")}">{esc(LABEL.get(status, status))}</b> '
            f'<code>{esc(r.check_id)}</code> in <code>{esc(key[0])}</code> '
            f'<span class="layer">layer: {esc(_layer(r))}</span> — {esc(r.message[:200])}</summary>')
    body = ['<dl>']
    if status == "xfail":
        body.append(f"<dt>baseline</dt><dd>{esc(m.xfail_reason[key])}</dd>")
    body.append(f"<dt>test</dt><dd><code>{esc(r.test_id)}</code></dd>")
    violations = r.violations or [{"message": r.message}]
    for v in violations[:8]:
        where = v.get("where") or {}
        where_text = ", ".join(f"{k} {val}" for k, val in where.items()) or "(the whole exchange)"
        body.append(f"<dt>violation</dt><dd><code>{esc(v.get('check_id', r.check_id))}</code>: {esc(v.get('message'))}</dd>")
        if v.get("expected") is not None:
            body.append(f"<dt>expected</dt><dd><pre>{esc(v.get('expected'))}</pre></dd>")
        if v.get("seen") is not None:
            body.append(f"<dt>seen</dt><dd><pre>{esc(v.get('seen'))}</pre></dd>")
        body.append(f"<dt>where</dt><dd>{esc(where_text)}</dd>")
    if spec is not None and spec.likely_cause:
        body.append(f"<dt>likely cause</dt><dd>{esc(spec.likely_cause)}</dd>")
    replay = _folder_file(r.artifacts, "reproduce.txt")
    curl = _folder_file(r.artifacts, "curl.sh")
    if replay:
        body.append(f'<dt>replay</dt><dd><pre class="cmd">{esc(replay.strip())}</pre></dd>')
    if curl:
        body.append(f'<dt>curl</dt><dd><pre class="cmd">{esc(curl.strip())}</pre></dd>')
    link = _link(r.artifacts, report_dir)
    if link:
        body.append(f'<dt>failure folder</dt><dd><a href="{esc(link)}">{esc(link)}</a></dd>')
    body.append("</dl>")
    return f'<details class="failure" id="{anchor}">{head}{"".join(body)}</details>'


# ----------------------------------------------------------------------------- plots
def _latest(results: list[Result], check_id: str, prefer_most: str | None = None) -> Result | None:
    recs = [r for r in results if r.check_id == check_id and r.details]
    if not recs:
        return None
    if prefer_most:
        return max(recs, key=lambda r: (len(r.details.get(prefer_most) or []), r.timestamp))
    return recs[-1]


def load_plots(results: list[Result]) -> list[str]:
    rec = _latest(results, "load.throughput", prefer_most="levels")
    if rec is None:
        return []
    levels = [lv for lv in rec.details.get("levels", []) if isinstance(lv, dict) and svg.number(lv.get("level"))]
    if not levels:
        return []
    acc = next((r for r in reversed(results) if r.check_id == "load.concurrency_acceptance"
                and r.test_id == rec.test_id), None)
    broke = svg.number((acc.details or {}).get("broke_at")) if acc is not None else None
    marks = [svg.Mark(broke, f"broke at {broke:g}")] if broke else []
    limited = [float(lv["level"]) for lv in levels if lv.get("client_limited")]
    why = {float(lv["level"]): str(lv.get("client_limited_by") or "") for lv in levels if lv.get("client_limited")}
    x = [float(lv["level"]) for lv in levels]
    thr = svg.LineChart("throughput", "Throughput vs concurrency", "requests in flight", "output tokens/s",
                        [svg.Series("output tokens/s", list(zip(x, [lv.get("output_tokens_per_s") for lv in levels],
                                                                  strict=True)))],
                        marks, limited, log_x=True, shaded_why=why)
    ttft = svg.LineChart("ttft", "Time to first token vs concurrency", "requests in flight", "seconds",
                         [svg.Series("TTFT p50", list(zip(x, [lv.get("ttft_p50_s") for lv in levels], strict=True))),
                          svg.Series("TTFT p95", list(zip(x, [lv.get("ttft_p95_s") for lv in levels], strict=True)),
                                     dashed=True)],
                         marks, limited, log_x=True, shaded_why=why)
    return [svg.line_chart(thr), svg.line_chart(ttft)]


def needle_plot(results: list[Result]) -> list[str]:
    rec = _latest(results, "context.needle_recall", prefer_most="points")
    if rec is None or not rec.details.get("points"):
        return []
    points = [p for p in rec.details["points"] if isinstance(p, dict)]
    lengths: dict[float, int] = {}
    for p in points:
        lengths.setdefault(p.get("fraction", 0.0), p.get("counted_tokens") or 0)
    rows = {f: f"{round(f * 100)}% ({lengths[f]} tok)" for f in sorted(lengths)}
    cols = {d: f"{round(d * 100)}%" for d in sorted({p.get("depth", 0.0) for p in points})}
    cells: dict[tuple[str, str], tuple[float | None, str]] = {}
    for p in points:
        outcome = p.get("outcome", "")
        value = 1.0 if outcome == "hit" else 0.0 if outcome == "miss" else None
        cells[(rows[p.get("fraction", 0.0)], cols[p.get("depth", 0.0)])] = (value, outcome)
    return [svg.heatmap("needle", "Needle recall (length of the limit x depth)", list(rows.values()),
                        list(cols.values()), cells, row_label="length", col_label="needle depth")]


def interference_plot(results: list[Result]) -> list[str]:
    inter = _latest(results, "load.interference")
    par = _latest(results, "load.long_context_parallel")
    bars: list[tuple[str, float | None]] = []
    if inter is not None:
        bars.append(("short p50 latency, with / without", inter.details.get("short_latency_ratio")))
        bars.append(("short throughput, without / with", inter.details.get("short_throughput_ratio")))
    if par is not None:
        bars.append((f"{par.details.get('parallel', 'k')} long at once / one alone", par.details.get("latency_ratio")))
    if not bars:
        return []
    return [svg.bar_chart("interference", "Interference (ratios in the same run)", bars, unit="x",
                          reference=1.0, reference_label="1 = no cost")]


def context_plot(results: list[Result]) -> list[str]:
    rec = _latest(results, "context.advertised_matches")
    if rec is None or rec.details.get("advertised") is None:
        return []
    d = rec.details
    bars: list[tuple[str, float | None]] = [("advertised", d.get("advertised"))]
    below, above = d.get("at_99pct") or {}, d.get("at_110pct") or {}
    if below:
        bars.append((f"99% sent: HTTP {below.get('status')}", below.get("tokens")))
    if above:
        bars.append((f"110% sent: HTTP {above.get('status')}", above.get("tokens")))
    if d.get("accepted_about") is not None:
        bars.append(("accepted at most (about)", d.get("accepted_about")))
    if d.get("accepted_at_least") is not None:
        bars.append(("accepted at least", d.get("accepted_at_least")))
    return [svg.bar_chart("context", "Context: advertised vs accepted (tokens)", bars,
                          reference=svg.number(d["advertised"]), reference_label="advertised")]


def phase_plots(results: list[Result]) -> list[str]:
    out = []
    for check_id, title, x_label in (("load.phase.prefill_rate", "Prefill tokens/s by prompt length", "prompt tokens"),
                                     ("load.phase.decode_rate", "Decode tokens/s (single stream and by concurrency)",
                                      "requests in flight")):
        rec = _latest(results, check_id, prefer_most="points")
        if rec is None:
            continue
        pts = [p for p in rec.details.get("points", []) if isinstance(p, dict)]
        pts = [p for p in pts if svg.number(p.get("x"))]
        xs = [float(p["x"]) for p in pts]

        def col(name: str, pts=pts) -> list[float | None]:
            return [p.get(name) for p in pts]

        chart = svg.LineChart(check_id.replace(".", "-"), title, x_label, "tokens/s",
                              [svg.Series("median", list(zip(xs, col("median"), strict=True))),
                               svg.Series("min", list(zip(xs, col("min"), strict=True)), dashed=True),
                               svg.Series("max", list(zip(xs, col("max"), strict=True)), dashed=True)],
                              log_x=True)
        out.append(svg.line_chart(chart))
    return out


# ----------------------------------------------------------------------------- the page
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:20px 0 6px}
table.meta td{padding:1px 10px 1px 0;vertical-align:top}table.meta td:first-child{color:#666}
.scroll{overflow-x:auto;max-width:100%}
table.matrix{border-collapse:collapse;font-size:12px;margin:0 0 12px}
table.matrix th,table.matrix td{border:1px solid #ddd;padding:2px 4px;text-align:center}
table.matrix th.row{text-align:left;white-space:nowrap;font-weight:normal}
th.area{background:#f0f0f0;text-align:left}th.corner{vertical-align:bottom;text-align:left;font-weight:normal;color:#666}
th.check{cursor:help;font-weight:normal;vertical-align:bottom;white-space:nowrap;padding:4px 2px}
th.check span{writing-mode:vertical-rl;transform:rotate(180deg);display:inline-block}
ul#headline{list-style:none;padding:0;margin:0 0 8px;font-size:16px}ul#headline li{margin:2px 0;padding:2px 6px}
ul#headline li.failed{background:#fbd3d0}ul#headline li.warning{background:#fff1c2}
ul#headline li.unverifiable{background:#e8e8f4}ul#headline li.passed{background:#e6f4ea}
div.cause{border-left:4px solid #b3261e;padding:2px 8px;margin:6px 0;overflow-wrap:anywhere}
div.cause dl{margin:2px 0;display:grid;grid-template-columns:max-content 1fr;gap:0 8px}
div.cause dt{color:#666}div.cause dd{margin:0}h3.cause-group{font-size:14px;margin:14px 0 4px;overflow-wrap:anywhere}
details.failure summary{overflow-wrap:anywhere}
td.passed{background:#e6f4ea}td.failed,td.error{background:#fbd3d0;font-weight:bold}
td.warning{background:#fff1c2}td.unverifiable{background:#e8e8f4}td.xfail{background:#f3e3f7}
td.info{background:#eef5fb;color:#456}td.skipped{color:#999}small.layer{font-weight:normal;color:#7a1a12}
details.failure{border:1px solid #e3b3af;border-radius:4px;margin:6px 0;padding:4px 8px;background:#fffafa}
details.failure summary{cursor:pointer}details.failure dt{font-weight:bold;margin-top:4px}
details.failure dd{margin:0 0 0 16px}pre{white-space:pre-wrap;word-break:break-all;margin:2px 0;
background:#f6f6f6;padding:4px}span.layer{color:#7a1a12;font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plots svg{width:560px;max-width:100%;border:1px solid #eee}
.plot-title{font-weight:bold;font-size:13px}.tick{font-size:10px}.axis,.legend{font-size:11px}
.cell-label{font-size:10px}.mark-label{font-size:11px}b.failed{color:#b3261e}b.xfail{color:#7b3a8a}
"""

_SCRIPT = """
(function(){
  function openAt(id){var d=document.getElementById(id);if(d&&d.tagName==='DETAILS'){d.open=true;
    d.scrollIntoView({block:'start'});}}
  document.addEventListener('click',function(e){var a=e.target.closest('a[data-open]');
    if(a){openAt(a.getAttribute('data-open'));}});
  if(location.hash){openAt(location.hash.slice(1));}
  window.addEventListener('hashchange',function(){openAt(location.hash.slice(1));});
  document.body.setAttribute('data-ready','1');
})();
"""


def run_meta(results: list[Result], meta: dict[str, str]) -> dict[str, str]:
    """The header: what the caller knows, completed from the records (clients, run time)."""
    out = dict(meta)
    clients = sorted({f"{r.client} {r.client_version}".strip() for r in results if r.client})
    if clients:
        out.setdefault("clients", ", ".join(clients))
    if results:  # only models that answered (a record's model may be the one sent)
        out.setdefault("answered by", ", ".join(answered_models(results)) or "none")
    if results:
        t0 = min(r.timestamp for r in results)
        t1 = max(r.timestamp for r in results)
        out.setdefault("run time", f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t0))} "
                                   f"({t1 - t0:.1f} s of recorded verdicts)")
    return out


def render(results: list[Result], meta: dict[str, str], *, baseline: Any = None,
           report_dir: Path | None = None) -> str:
    m = Matrix(results, baseline)
    anchors = {key: f"f-{i + 1}" for i, key in enumerate(sorted(m.failing))}
    header = run_meta(results, meta)
    counts: dict[str, int] = defaultdict(int)
    for v in m.cells.values():
        counts[v] += 1
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             # no network: a policy that forbids every fetch, so the page can prove it is self-contained
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
             "script-src 'unsafe-inline'; img-src data:\">",
             f"<title>conformance report — {esc(header.get('target', ''))}</title><style>{_CSS}</style></head><body>",
             "<h1>Conformance report</h1>", headline_html(results, esc)]
    causes = from_results(results)
    parts.append(f"<h2>Root causes ({len(causes)}), the most tests first</h2>")
    parts.append(causes_html(causes, esc))
    parts.append("<h2>Run</h2><table class=\"meta\" id=\"header\">")
    for k, v in header.items():
        parts.append(f"<tr><td>{esc(k)}</td><td>{esc(v or '(unknown)')}</td></tr>")
    parts.append("</table>")
    order = ["failed", "error", "xfail", "warning", "unverifiable", "passed", "info", "skipped"]
    parts.append("<p id=\"counts\">" + ", ".join(f"{counts[o]} {esc(LABEL[o])}" for o in order if counts.get(o))
                 + f" ({sum(counts.values())} cells)</p>")
    parts.append("<h2>Matrix</h2>")
    parts.append(_matrix_html(m, anchors))
    parts.append(f"<h2>Failures ({len(anchors)}), by cause</h2><div id=\"failures\">")
    if not anchors:
        parts.append("<p>None.</p>")
    for title, keys in _failures_by_cause(causes, m, anchors):
        parts.append(f'<h3 class="cause-group">{esc(title)} ({len(keys)})</h3>')
        parts += [_failure_html(anchors[key], key, m.failing[key], m, report_dir) for key in keys]
    parts.append("</div>")
    plots = load_plots(results) + needle_plot(results) + interference_plot(results) + context_plot(results) \
        + phase_plots(results) + soak_plots(results)
    if plots:
        parts.append("<h2>Figures</h2><div class=\"plots\" id=\"plots\">" + "".join(plots) + "</div>")
    else:
        parts.append("<h2>Figures</h2><p id=\"no-figures\">None in this run: the throughput and latency plots "
                     "need <code>-m load</code>, the needle and context plots <code>-m context</code>, the "
                     "phase figures <code>-m perf</code>.</p>")
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "".join(parts) + "\n"


def _failures_by_cause(causes: list[Cause], m: Matrix, anchors: dict) -> list[tuple[str, list]]:
    """(cause title, failing cells) in the causes' order; a cell is listed under its first cause,
    cells no cause names last."""
    placed: set = set()
    out = []
    for n, cause in enumerate(causes, 1):
        tests = set(cause.tests)
        keys = [k for k in anchors if k not in placed and m.failing[k].test_id in tests
                and (cause.kind != "check" or m.failing[k].check_id == cause.check_id)]
        if keys:
            placed.update(keys)
            out.append((f"{n}. {cause.what}", keys))
    rest = [k for k in anchors if k not in placed]
    if rest:
        out.append(("Other failures", rest))
    return out


def write_html(report_dir: Path, meta: dict[str, str], *, baseline: Any = None) -> Path | None:
    report_dir = Path(report_dir)
    results_dir = report_dir / "results"
    if not results_dir.is_dir():
        return None
    results = read_results(results_dir)
    path = report_dir / "report.html"
    path.write_text(scrub_text(render(results, meta, baseline=baseline, report_dir=report_dir)), encoding="utf-8")
    return path

