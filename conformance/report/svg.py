"""Small inline SVG plots for the HTML report: line charts, a heatmap, bars. Standard library only.

Rules:
- Each function returns one `<svg class="plot" data-plot=NAME>` element as text, sized by a fixed
  viewBox so it scales with the page; no script, no external reference (the report opens from disk).
- Every label is escaped (`xml_text`): names and figures can come from the target (model names,
  error text), which is untrusted.
- Missing values (None) leave a gap, never a zero: a level that produced no figure is not a figure.
- Marked x positions (the level where a ramp broke) get a vertical rule with a label; shaded x
  positions (levels limited by the client, not the target) get a hatched band and a legend entry,
  so a person never reads a client limit as the target's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
W, H = 560, 300
PAD_L, PAD_R, PAD_T, PAD_B = 58, 16, 30, 46


def xml_text(value: object) -> str:
    return escape(str(value), quote=True)


def _num(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


@dataclass
class Series:
    name: str
    points: list[tuple[float, float | None]]
    dashed: bool = False


@dataclass
class Mark:
    x: float
    label: str


@dataclass
class LineChart:
    name: str
    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    shaded: list[float] = field(default_factory=list)  # x positions drawn as "client-limited"
    shaded_label: str = "client-limited"
    shaded_why: dict[float, str] = field(default_factory=dict)  # x -> why (shown on hover)
    log_x: bool = False


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(step))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= step), default=step)
    start = math.floor(lo / step) * step
    out, v = [], start
    while v <= hi + step * 1e-9:
        if v >= lo - step * 1e-9:
            out.append(round(v, 10))
        v += step
    return out


def number(value: object) -> float | None:
    """A figure as a float, or None: a record's figure can be anything (it is data, not code)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def line_chart(chart: LineChart) -> str:
    chart.series = [Series(s.name, [(x, number(y)) for x, y in s.points if number(x) is not None], s.dashed)
                    for s in chart.series]
    xs = sorted({x for s in chart.series for x, _ in s.points} | {m.x for m in chart.marks} | set(chart.shaded))
    ys = [y for s in chart.series for _, y in s.points if y is not None]
    out = [f'<svg class="plot" data-plot="{xml_text(chart.name)}" viewBox="0 0 {W} {H}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{xml_text(chart.title)}</title>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" class="plot-title">{xml_text(chart.title)}</text>']
    if not xs or not ys:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no figures recorded</text></svg>')
        return "".join(out)

    def fx(v: float) -> float:
        return math.log2(v) if chart.log_x and v > 0 else v

    x0, x1 = fx(xs[0]), fx(xs[-1])
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y1 = max(ys) * 1.1 or 1.0
    ticks_y = _ticks(0.0, y1)
    y1 = max(y1, ticks_y[-1])
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def px(v: float) -> float:
        return round(PAD_L + (fx(v) - x0) / (x1 - x0) * pw, 1)

    def py(v: float) -> float:
        return round(PAD_T + ph - v / y1 * ph, 1)

    band = pw / max(len(xs), 2) / 2
    out.append(f'<defs><pattern id="hatch-{xml_text(chart.name)}" width="6" height="6" '
               'patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" '
               'fill="#bbb"/></pattern></defs>')
    for x in chart.shaded:
        out.append(f'<rect class="client-limited" x="{px(x) - band / 2:.1f}" y="{PAD_T}" width="{band:.1f}" '
                   f'height="{ph}" fill="url(#hatch-{xml_text(chart.name)})" opacity="0.6">'
                   f'<title>{xml_text(chart.shaded_label)} at {xml_text(_num(x))}'
                   f'{xml_text(": " + chart.shaded_why[x]) if chart.shaded_why.get(x) else ""}</title></rect>')
    out.append(f'<line x1="{PAD_L}" y1="{PAD_T + ph}" x2="{PAD_L + pw}" y2="{PAD_T + ph}" stroke="#333"/>'
               f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + ph}" stroke="#333"/>')
    for t in ticks_y:
        out.append(f'<line x1="{PAD_L - 4}" y1="{py(t)}" x2="{PAD_L + pw}" y2="{py(t)}" stroke="#eee"/>'
                   f'<text x="{PAD_L - 6}" y="{py(t) + 4}" text-anchor="end" class="tick">{_num(t)}</text>')
    for x in xs:
        out.append(f'<text x="{px(x)}" y="{PAD_T + ph + 16}" text-anchor="middle" class="tick">{_num(x)}</text>')
    out.append(f'<text x="{PAD_L + pw / 2}" y="{H - 8}" text-anchor="middle" class="axis">{xml_text(chart.x_label)}</text>'
               f'<text x="14" y="{PAD_T + ph / 2}" text-anchor="middle" class="axis" '
               f'transform="rotate(-90 14 {PAD_T + ph / 2})">{xml_text(chart.y_label)}</text>')
    for m in chart.marks:
        out.append(f'<line class="mark" x1="{px(m.x)}" y1="{PAD_T}" x2="{px(m.x)}" y2="{PAD_T + ph}" '
                   f'stroke="#d62728" stroke-width="2" stroke-dasharray="5 3"/>'
                   f'<text x="{px(m.x) + 4}" y="{PAD_T + 12}" class="mark-label" fill="#d62728">{xml_text(m.label)}</text>')
    for i, s in enumerate(chart.series):
        color = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        run: list[str] = []
        runs: list[list[str]] = []
        for x, y in sorted(s.points, key=lambda p: p[0]):
            if y is None:
                if run:
                    runs.append(run)
                run = []
                continue
            run.append(f"{px(x)},{py(y)}")
        if run:
            runs.append(run)
        for r in runs:
            out.append(f'<polyline class="series" data-series="{xml_text(s.name)}" fill="none" stroke="{color}" '
                       f'stroke-width="2"{dash} points="{" ".join(r)}"/>')
        for x, y in s.points:
            if y is not None:
                out.append(f'<circle cx="{px(x)}" cy="{py(y)}" r="3" fill="{color}">'
                           f'<title>{xml_text(s.name)} at {xml_text(_num(x))}: {xml_text(_num(y))}</title></circle>')
        lx = PAD_L + 8 + i * 130
        out.append(f'<line x1="{lx}" y1="{PAD_T - 4}" x2="{lx + 16}" y2="{PAD_T - 4}" stroke="{color}" stroke-width="2"{dash}/>'
                   f'<text x="{lx + 20}" y="{PAD_T}" class="legend">{xml_text(s.name)}</text>')
    if chart.shaded:
        lx = PAD_L + 8 + len(chart.series) * 130
        out.append(f'<rect x="{lx}" y="{PAD_T - 10}" width="14" height="10" fill="url(#hatch-{xml_text(chart.name)})"/>'
                   f'<text x="{lx + 18}" y="{PAD_T}" class="legend">{xml_text(chart.shaded_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def heatmap(name: str, title: str, rows: Sequence[str], cols: Sequence[str],
            cells: dict[tuple[str, str], tuple[float | None, str]], *, row_label: str = "", col_label: str = "") -> str:
    """`cells[(row, col)] = (value 0..1 or None, label)`: red (0) to green (1), grey when None."""
    cw, ch, left, top = 70, 28, 110, 52
    w, h = left + cw * max(len(cols), 1) + 10, top + ch * max(len(rows), 1) + 24
    out = [f'<svg class="plot" data-plot="{xml_text(name)}" viewBox="0 0 {w} {h}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{xml_text(title)}</title>',
           f'<text x="{w / 2}" y="16" text-anchor="middle" class="plot-title">{xml_text(title)}</text>',
           f'<text x="{left + cw * len(cols) / 2}" y="32" text-anchor="middle" class="axis">{xml_text(col_label)}</text>',
           f'<text x="6" y="{top - 6}" class="axis">{xml_text(row_label)}</text>']
    for j, c in enumerate(cols):
        out.append(f'<text x="{left + cw * j + cw / 2}" y="{top - 6}" text-anchor="middle" class="tick">{xml_text(c)}</text>')
    for i, r in enumerate(rows):
        out.append(f'<text x="{left - 6}" y="{top + ch * i + ch / 2 + 4}" text-anchor="end" class="tick">{xml_text(r)}</text>')
        for j, c in enumerate(cols):
            value, label = cells.get((r, c), (None, ""))
            value = number(value)
            if value is None:
                fill = "#ccc"
            else:
                v = min(max(value, 0.0), 1.0)
                fill = f"rgb({round(215 - 170 * v)},{round(60 + 140 * v)},{round(60 + 20 * v)})"
            x, y = left + cw * j, top + ch * i
            out.append(f'<rect class="cell" x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{fill}">'
                       f'<title>{xml_text(r)} / {xml_text(c)}: {xml_text(label)}</title></rect>'
                       f'<text x="{x + cw / 2}" y="{y + ch / 2 + 3}" text-anchor="middle" class="cell-label">'
                       f'{xml_text(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def bar_chart(name: str, title: str, bars: Sequence[tuple[str, float | None]], *, unit: str = "",
              reference: float | None = None, reference_label: str = "") -> str:
    """Horizontal bars; `reference` draws a vertical rule (e.g. ratio 1 = no change)."""
    bh, left, top = 26, 230, 30
    w = 560
    h = top + bh * max(len(bars), 1) + 24
    bars = [(label, number(v)) for label, v in bars]
    vals = [v for _, v in bars if v is not None] + ([reference] if reference is not None else [])
    hi = max(vals) * 1.15 if vals and max(vals) > 0 else 1.0
    pw = w - left - 60
    out = [f'<svg class="plot" data-plot="{xml_text(name)}" viewBox="0 0 {w} {h}" role="img" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{xml_text(title)}</title>',
           f'<text x="{w / 2}" y="16" text-anchor="middle" class="plot-title">{xml_text(title)}</text>']
    for i, (label, v) in enumerate(bars):
        y = top + bh * i
        out.append(f'<text x="{left - 6}" y="{y + bh / 2 + 4}" text-anchor="end" class="tick">{xml_text(label)}</text>')
        if v is None:
            out.append(f'<text x="{left + 4}" y="{y + bh / 2 + 4}" class="tick">not measured</text>')
            continue
        bw = max(v / hi * pw, 1)
        out.append(f'<rect class="bar" x="{left}" y="{y + 3}" width="{bw:.1f}" height="{bh - 6}" fill="{PALETTE[0]}">'
                   f'<title>{xml_text(label)}: {xml_text(_num(v))}{xml_text(unit)}</title></rect>'
                   f'<text x="{left + bw + 4:.1f}" y="{y + bh / 2 + 4}" class="tick">{xml_text(_num(v))}{xml_text(unit)}</text>')
    if reference is not None:
        rx = left + reference / hi * pw
        out.append(f'<line class="mark" x1="{rx:.1f}" y1="{top - 4}" x2="{rx:.1f}" y2="{h - 20}" stroke="#555" '
                   f'stroke-dasharray="4 3"/><text x="{rx:.1f}" y="{h - 6}" text-anchor="middle" class="tick">'
                   f'{xml_text(reference_label)}</text>')
    out.append("</svg>")
    return "".join(out)
