"""Compare two runs of the suite: verdicts that flipped, every figure as a ratio, which phase moved.

Rules:
- A run is a results folder (`reports/results/`, or the report folder holding it): the results
  record plus `run.json`, the settings the run was made with (written once by the controller at
  the end of the session, `write_run_settings`). Nothing is re-judged; verdicts are the records'.
- Runs of different APIs are refused (`CompareError`, with both APIs and how to fix): their
  checks are different sets, so a "flip" would mean nothing.
- What changed leads: the flips that matter grouped by check and layer, ranked broke before
  fixed, then by severity and layer; flips only between passed, unverifiable, info and skipped
  ("could tell" vs "could not tell") are counted apart and listed last, never in the headline.
- Settings that differ (salt, deadlines, model map, model, markers, the kind of stack and the
  target, the seeds `rng_seed` of the loops) and versions that differ (engine, router, clients,
  suite) come next: they are what the reader attributes a change to. A seed is a setting, never a figure.
- A verdict is the worst outcome per (test, check) (`conformance.core.verdict.RANK`); a flip is any change of it
  between the runs, listed with the layer of the failing side; tests only one run has are counted
  apart, never as flips.
- Figures: every numeric leaf of a record's details present in both runs, as B / A.
- Phases (`load.phase.*`, each point with `min`/`median`/`max` over `repeats`): a phase *moved*
  when B's [min, max] lies wholly outside A's spread ([min, max], widened to at least
  NOISE_FLOOR of A's median on each side: timer and scheduling noise that three repeats on a
  shared machine cannot show); otherwise it is *unchanged within the spread*. A point measured
  once in either run is "seen once: not a result", never a verdict.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.core.results import Result, read_results
from conformance.core.secrets import scrub_text
from conformance.core.verdict import RANK

RUN_FILE = "run.json"
NOT_RECORDED = "(not recorded)"
# Timer and scheduling noise that three repeats on a shared machine cannot show: a phase "moves"
# only beyond its repeats' spread and at least this fraction of its median.
NOISE_FLOOR = 0.10
PHASE_CHECKS = ("load.phase.prefill_rate", "load.phase.decode_rate")
_SKIP_FIGURES = ("timestamp", "status", "record_version", "limit", "level", "x", "concurrency", "parallel",
                 "repeats", "fraction", "depth", "values") + ("rng_seed", "seed")
# Settings, not figures: a seed draws a scenario's variables; a different seed is a different
# experiment, listed with the settings, never a ratio.
SEED_KEYS = ("rng_seed", "seed")
# Flips between these outcomes say "could tell" vs "could not tell", not that the stack changed:
# counted apart, never in the headline.
QUIET_OUTCOMES = frozenset({"passed", "unverifiable", "info", "skipped", NOT_RECORDED})
_SEVERITY = {"failed": 0, "error": 0, "warning": 1}
_LAYER_ORDER = {"router": 0, "engine": 1, "both": 2, "model": 3}


class CompareError(ValueError):
    """Two runs that cannot be compared, or a folder that is not a run."""


def write_run_settings(results_dir: Path, facts: dict[str, Any], settings: dict[str, Any]) -> Path:
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / RUN_FILE
    path.write_text(scrub_text(json.dumps({"facts": facts, "settings": settings}, indent=1, sort_keys=True,
                                          default=str) + "\n"), encoding="utf-8")
    return path


@dataclass
class Run:
    folder: Path
    results: list[Result]
    facts: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def apis(self) -> set[str]:
        told = self.settings.get("api")
        if told and told != "auto":
            return {told}
        return {r.api for r in self.results if r.api}

    def verdicts(self) -> dict[tuple[str, str], Result]:
        out: dict[tuple[str, str], Result] = {}
        for r in self.results:
            key = (r.test_id, r.check_id)
            if key not in out or RANK[r.outcome] > RANK[out[key].outcome]:
                out[key] = r
        return out

    def versions(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for r in self.results:
            out.update({k: v for k, v in r.versions.items() if v})
            if r.client:
                out[f"client {r.client}"] = r.client_version
        for k in ("engine", "router", "suite"):
            if self.facts.get(k):
                out[k] = str(self.facts[k])
        return out


def load_run(folder: Path | str) -> Run:
    folder = Path(folder)
    if not folder.is_dir():
        raise CompareError(f"{folder} is not a folder: give the results folder of a run (reports/results/) "
                           "or the report folder that holds it")
    results_dir = folder / "results" if (folder / "results").is_dir() else folder
    if not any(results_dir.glob("results-*.jsonl")):
        raise CompareError(f"{folder} holds no results record (results-*.jsonl): run `conformance run` "
                           "(or pytest with --target) to make one, then compare its reports/ folder")
    run = Run(folder, read_results(results_dir))
    meta = results_dir / RUN_FILE
    if meta.is_file():
        doc = json.loads(meta.read_text(encoding="utf-8"))
        run.facts, run.settings = doc.get("facts", {}), doc.get("settings", {})
    return run


# ----------------------------------------------------------------------------- the comparison
@dataclass
class Flip:
    test_id: str
    check_id: str
    before: str
    after: str
    layer: str
    message: str

    @property
    def direction(self) -> str:
        bad = ("failed", "error")
        if self.after in bad and self.before not in bad:
            return "broke"
        if self.before in bad and self.after not in bad:
            return "fixed"
        return "changed"


@dataclass
class FigureRatio:
    test_id: str
    check_id: str
    figure: str
    a: float
    b: float

    @property
    def ratio(self) -> float | None:
        return round(self.b / self.a, 3) if self.a else None


@dataclass
class PhaseVerdict:
    check_id: str
    point: str
    a: dict[str, Any]
    b: dict[str, Any]
    verdict: str  # moved up | moved down | unchanged within the spread | seen once: not a result
    ratio: float | None


@dataclass
class Comparison:
    a: Run
    b: Run
    settings_differ: list[tuple[str, Any, Any]]
    versions_differ: list[tuple[str, str, str]]
    flips: list[Flip]
    only_a: int
    only_b: int
    figures: list[FigureRatio]
    phases: list[PhaseVerdict]


def _flatten(value: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, int | float):
        if math.isfinite(value):
            out[prefix] = float(value)
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _SKIP_FIGURES:
                continue
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            tag = str(i)
            if isinstance(v, dict):  # name a list entry by what it is about, not where it sits
                ident = [f"{k}={v[k]}" for k in ("level", "x", "fraction", "depth", "case") if k in v]
                tag = ",".join(ident) or tag
            out.update(_flatten(v, f"{prefix}[{tag}]"))
    return out


def _phase_verdict(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, float | None]:
    ratio = round(b["median"] / a["median"], 3) if a.get("median") and b.get("median") is not None else None
    if min(int(a.get("repeats") or 1), int(b.get("repeats") or 1)) < 2:
        return "seen once: not a result", ratio
    # the spread of a few repeats, never narrower than NOISE_FLOOR of the median on either side
    floor = NOISE_FLOOR * float(a["median"] or 0)
    lo, hi = min(float(a["min"]), float(a["median"]) - floor), max(float(a["max"]), float(a["median"]) + floor)
    if b["min"] > hi:
        return "moved up", ratio
    if b["max"] < lo:
        return "moved down", ratio
    return "unchanged within the spread", ratio


def _phases(va: dict, vb: dict) -> list[PhaseVerdict]:
    out = []
    for key in sorted(set(va) & set(vb)):
        if key[1] not in PHASE_CHECKS:
            continue
        pa = {str(p.get("label", p.get("x"))): p for p in va[key].details.get("points", []) if isinstance(p, dict)}
        pb = {str(p.get("label", p.get("x"))): p for p in vb[key].details.get("points", []) if isinstance(p, dict)}
        for name in pa.keys() & pb.keys():
            a, b = pa[name], pb[name]
            if any(a.get(k) is None or b.get(k) is None for k in ("min", "median", "max")):
                out.append(PhaseVerdict(key[1], name, a, b, "not measured in both runs", None))
                continue
            verdict, ratio = _phase_verdict(a, b)
            out.append(PhaseVerdict(key[1], name, a, b, verdict, ratio))
    out.sort(key=lambda p: (p.check_id, float(p.a.get("x") or 0)))
    return out


def _stack_kind(run: Run) -> str:
    """What was tested, in kind: a router (it told its version), an engine, or not recorded."""
    if not run.facts:
        return NOT_RECORDED
    if run.facts.get("router"):
        return f"router ({run.facts['router']})"
    engine = str(run.facts.get("engine") or "")
    return f"engine ({engine})" if engine else "engine or router (not told)"


def _target_identity(target: str) -> str:
    """A target as a setting: a loopback server's port is whatever was free when it started (the
    embedded engine, a test's router), so two runs on this machine are the same target whatever
    their ports; another host, path or scheme is another target."""
    parts = urlsplit(str(target))
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return f"{parts.scheme}://loopback{parts.path.rstrip('/')}"
    return str(target)


def _seeds(run: Run) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in run.results:
        for key in SEED_KEYS:
            if isinstance(r.details, dict) and r.details.get(key) is not None:
                out[r.test_id] = str(r.details[key])
    return out


def compare(a: Run, b: Run) -> Comparison:
    if a.apis and b.apis and a.apis != b.apis:
        raise CompareError(
            f"the runs tested different APIs: {a.folder} tested {', '.join(sorted(a.apis))}, {b.folder} tested "
            f"{', '.join(sorted(b.apis))}; their checks differ, so nothing can be compared. Compare two runs "
            "of the same API (pass --conformance-api to both runs).")
    keys = sorted(set(a.settings) | set(b.settings))
    settings_differ = [(k, a.settings.get(k), b.settings.get(k)) for k in keys if a.settings.get(k) != b.settings.get(k)]
    if a.facts.get("markers", "") != b.facts.get("markers", ""):
        settings_differ.append(("markers (-m)", a.facts.get("markers", ""), b.facts.get("markers", "")))
    for name, fa, fb in (("stack", _stack_kind(a), _stack_kind(b)), ("target", a.facts.get("target", NOT_RECORDED),
                                                                         b.facts.get("target", NOT_RECORDED))):
        same = _target_identity(fa) == _target_identity(fb) if name == "target" else fa == fb
        if not same:
            settings_differ.append((name, fa, fb))
    seeds_a, seeds_b = _seeds(a), _seeds(b)
    differ = sorted(t for t in seeds_a.keys() & seeds_b.keys() if seeds_a[t] != seeds_b[t])
    if differ:
        settings_differ.append((f"seeds (rng_seed) of {len(differ)} test(s)", ", ".join(
            f"{t}={seeds_a[t]}" for t in differ[:3]), ", ".join(f"{t}={seeds_b[t]}" for t in differ[:3])))
    vera, verb = a.versions(), b.versions()
    versions_differ = [(k, vera.get(k, ""), verb.get(k, "")) for k in sorted(set(vera) | set(verb))
                       if vera.get(k, "") != verb.get(k, "")]
    va, vb = a.verdicts(), b.verdicts()
    flips = []
    both_tests = {k[0] for k in va} & {k[0] for k in vb}
    for key in sorted(set(va) | set(vb)):
        ra, rb = va.get(key), vb.get(key)
        if ra is not None and rb is not None and ra.outcome == rb.outcome:
            continue
        if ra is None or rb is None:
            # a check one run never recorded for a test both ran: a flip only when it failed there
            # (many checks record only their violations); a pass left out because the test stopped
            # early is counted as "not judged", not as a flip
            present = ra or rb
            if key[0] not in both_tests or present.outcome not in ("failed", "error"):
                continue
        failing = next((r for r in (rb, ra) if r is not None and r.outcome in ("failed", "error")), rb or ra)
        flips.append(Flip(key[0], key[1], ra.outcome if ra else NOT_RECORDED, rb.outcome if rb else NOT_RECORDED,
                          failing.layer or "unattributed", failing.message[:200]))
    figures = []
    for key in sorted(set(va) & set(vb)):
        fa, fb = _flatten(va[key].details), _flatten(vb[key].details)
        for name in sorted(fa.keys() & fb.keys()):
            figures.append(FigureRatio(key[0], key[1], name, fa[name], fb[name]))
    return Comparison(a, b, settings_differ, versions_differ, flips, len(set(va) - set(vb)), len(set(vb) - set(va)),
                      figures, _phases(va, vb))


# ----------------------------------------------------------------------------- rendering
def _cell(v: Any) -> str:
    text = json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else ("" if v is None else str(v))
    return text.replace("|", "\\|").replace("\n", " ")


def _spread(p: dict[str, Any]) -> str:
    return f"{p.get('median')} [{p.get('min')}..{p.get('max')}] x{p.get('repeats', 1)}"


def is_quiet(f: Flip) -> bool:
    """A flip between "could tell" and "could not tell" (passed <-> unverifiable, info, skipped)."""
    return f.before in QUIET_OUTCOMES and f.after in QUIET_OUTCOMES


def _rank(f: Flip) -> tuple:
    worst = min(_SEVERITY.get(f.after, 2), _SEVERITY.get(f.before, 2))
    return ({"broke": 0, "fixed": 1}.get(f.direction, 2), worst, _LAYER_ORDER.get(f.layer, 4))


def what_changed(c: Comparison) -> list[list[Any]]:
    """The headline rows: flips that matter, by check and layer, ranked by direction (broke
    first), severity and layer; the passed <-> unverifiable noise is left out."""
    groups: dict[tuple[str, str, str], list[Flip]] = {}
    for f in c.flips:
        if not is_quiet(f):
            groups.setdefault((f.direction, f.check_id, f.layer), []).append(f)
    ranked = sorted(groups.items(), key=lambda kv: (_rank(kv[1][0]), -len(kv[1]), kv[0][1]))
    return [[direction, check, layer, len(flips), f"{flips[0].before} -> {flips[0].after}", flips[0].message]
            for (direction, check, layer), flips in ranked]


def _sections(c: Comparison) -> list[tuple[str, list[str], list[list[Any]]]]:
    """(title, header, rows): the one content both renderers draw, what changed first."""
    loud = [f for f in c.flips if not is_quiet(f)]
    out: list[tuple[str, list[str], list[list[Any]]]] = [
        ("What changed, most severe first", ["direction", "check", "layer", "tests", "A -> B", "e.g."],
         what_changed(c)),
        ("Settings that differ", ["setting", "A", "B"], [list(s) for s in c.settings_differ]),
        ("Versions that differ", ["component", "A", "B"], [list(v) for v in c.versions_differ]),
    ]
    by_check: dict[tuple[str, str], dict[str, int]] = {}
    for f in loud:
        counts = by_check.setdefault((f.check_id, f.layer), {"broke": 0, "fixed": 0, "changed": 0})
        counts[f.direction] += 1
    out.append(("Flips by check and layer", ["check", "layer", "broke", "fixed", "changed"],
                [[check, layer, n["broke"], n["fixed"], n["changed"]] for (check, layer), n in sorted(by_check.items())]))
    out.append((f"Verdicts that flipped ({len(loud)}; passed <-> unverifiable and the like: {len(c.flips) - len(loud)}, "
                "listed last)", ["test", "check", "A", "B", "direction", "layer", "message"],
                [[f.test_id, f.check_id, f.before, f.after, f.direction, f.layer, f.message]
                 for f in sorted(c.flips, key=is_quiet)]))
    if c.phases:
        out.append(("Phases: which moved beyond the spread of the repeats", ["phase", "point", "A median [min..max] xK",
                                                                            "B median [min..max] xK", "B/A", "verdict"],
                    [[p.check_id.rsplit(".", 1)[1], p.point, _spread(p.a), _spread(p.b), p.ratio, p.verdict]
                     for p in c.phases]))
    out.append((f"Figures, B / A ({len(c.figures)})", ["test", "check", "figure", "A", "B", "B/A"],
                [[f.test_id, f.check_id, f.figure, f.a, f.b, f.ratio] for f in c.figures]))
    return out


def phase_summary(c: Comparison) -> list[str]:
    """One line per phase: moved (which way, by how much, at how many points) or not."""
    out = []
    for check_id in PHASE_CHECKS:
        pts = [p for p in c.phases if p.check_id == check_id]
        if not pts:
            continue
        phase = check_id.rsplit(".", 1)[1].removesuffix("_rate")
        moved = [p for p in pts if p.verdict.startswith("moved")]
        judged = [p for p in pts if p.verdict.startswith(("moved", "unchanged"))]
        once = len(pts) - len(judged)
        tail = f"; {once} point(s) seen once or not measured: not a result" if once else ""
        if moved:
            ways = sorted({p.verdict for p in moved})
            ratios = ", ".join(f"{p.point} x{p.ratio}" for p in moved)
            out.append(f"{phase}: {' and '.join(ways)} beyond the spread of the repeats at {len(moved)} of "
                       f"{len(judged)} point(s) ({ratios}){tail}")
        elif judged:
            out.append(f"{phase}: unchanged within the spread of the repeats at all {len(judged)} point(s){tail}")
        else:
            out.append(f"{phase}: no point measured more than once in both runs: nothing to say{tail}")
    return out


def _intro(c: Comparison) -> list[str]:
    return [f"A: {c.a.folder} ({len(c.a.results)} records)", f"B: {c.b.folder} ({len(c.b.results)} records)",
            f"API: {', '.join(sorted(c.a.apis | c.b.apis)) or '(unknown)'}",
            f"{sum(not is_quiet(f) for f in c.flips)} verdict(s) changed "
            f"({sum(f.direction == 'broke' for f in c.flips)} broke, {sum(f.direction == 'fixed' for f in c.flips)} "
            f"fixed); {sum(is_quiet(f) for f in c.flips)} only between passed and unverifiable (or info, skipped); "
            f"{c.only_a} verdict(s) only in A, {c.only_b} only in B",
            *phase_summary(c)]


def _none(c: Comparison, title: str) -> str:
    """What an empty section says: "None.", unless a run did not record what it would compare."""
    if title == "Settings that differ" and not (c.a.settings and c.b.settings):
        missing = " and ".join(n for n, run in (("A", c.a), ("B", c.b)) if not run.settings)
        return f"Not recorded for {missing} (no results/{RUN_FILE}): they may differ."
    return "None."


def render_markdown(c: Comparison) -> str:
    out = ["# Conformance comparison", ""] + [f"- {line}" for line in _intro(c)]
    for title, header, rows in _sections(c):
        out += ["", f"## {title}", ""]
        if not rows:
            out.append(_none(c, title))
            continue
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def render_html(c: Comparison) -> str:
    def e(v: Any) -> str:
        return escape(_cell(v).replace("\\|", "|"), quote=True)

    out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
           "<title>conformance comparison</title><style>body{font:14px system-ui,sans-serif;margin:16px}"
           "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px}"
           "tr.broke td{background:#fbd3d0}tr.fixed td{background:#e6f4ea}tr.moved td{background:#fff1c2}"
           "</style></head><body><h1>Conformance comparison</h1><ul>"]
    out += [f"<li>{e(line)}</li>" for line in _intro(c)]
    out.append("</ul>")
    for title, header, rows in _sections(c):
        out.append(f"<h2>{e(title)}</h2>")
        if not rows:
            out.append(f"<p>{e(_none(c, title))}</p>")
            continue
        out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        for row in rows:
            cls = next((str(v) for v in row if v in ("broke", "fixed")), "")
            if any(isinstance(v, str) and v.startswith("moved") for v in row):
                cls = "moved"
            out.append(f"<tr class=\"{cls}\">" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>")
        out.append("</table>")
    out.append("</body></html>")
    return "".join(out) + "\n"
