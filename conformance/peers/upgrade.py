"""The upgrade view: for each router, what its newest release fixed, broke and changed against the
pinned one, by check and layer, from the two generations' peer results.

    python -m conformance.peers.upgrade [--reports reports/peers]   # writes upgrade.md, matrix.html

Rules:
- Built on `conformance report compare`'s data (`load_run`, `compare`, `Flip.direction`): the two
  runs of a stack pair (conformance.peers.stacks.twin) are compared as any two runs are; nothing is
  re-judged here. Rendering is this module's own, so compare's report pages stay as they are.
- Per router, every stack pair that ran in both generations is one section; its flips are grouped
  as fixed, broke and changed, each line a check with its layer and how many tests moved.
- "Same check, new reason": a (test, check) pair failing in both generations whose violation
  fingerprint (conformance.peers.fingerprint) differs is listed beside the flips: the gate would
  not see it as a flip.
- A pair that did not run in both generations is named with what is missing, never skipped
  silently. The version matrix (conformance.peers.version_matrix) is written beside this page.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from conformance.peers.fingerprint import pair_fingerprints
from conformance.peers.matrix import stack_results
from conformance.peers.stacks import STACKS, Stack, twin
from conformance.peers.version_matrix import write_version_matrix
from conformance.report.compare import CompareError, Comparison, compare, load_run

ROUTER_NAMES = {"litellm": "LiteLLM", "ccr": "claude-code-router"}
DIRECTIONS = ("fixed", "broke", "changed")


@dataclass
class PairView:
    pinned: Stack
    latest: Stack
    comparison: Comparison | None = None
    missing: str = ""
    # direction -> (check, layer) -> number of tests
    moved: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    new_reasons: list[tuple[str, str, str, str]] = field(default_factory=list)  # test, check, before, after


def stack_pairs(stacks: tuple[Stack, ...] = STACKS) -> list[tuple[Stack, Stack]]:
    """(pinned, next) for every router stack that has both generations."""
    return [(s, t) for s in stacks if s.router and s.generation == "pinned" and (t := twin(s)) is not None]


def pair_view(reports: Path, pinned: Stack, latest: Stack) -> PairView:
    view = PairView(pinned, latest)
    absent = [s.name for s in (pinned, latest) if not stack_results(reports, s.name)]
    if absent:
        view.missing = f"no results for {', '.join(absent)} under {reports}"
        return view
    try:
        view.comparison = compare(load_run(reports / pinned.name), load_run(reports / latest.name))
    except CompareError as exc:
        view.missing = str(exc)
        return view
    for flip in view.comparison.flips:
        view.moved[flip.direction][(flip.check_id, flip.layer)] += 1
    before = pair_fingerprints(view.comparison.a.results)
    after = pair_fingerprints(view.comparison.b.results)
    for key in sorted(before.keys() & after.keys()):
        if before[key] != after[key]:
            view.new_reasons.append((key[0], key[1], before[key], after[key]))
    return view


def _version(view: PairView, side: str) -> str:
    run = getattr(view.comparison, side) if view.comparison else None
    return (run.versions().get("router") if run else None) or "?"


def render_markdown(views: list[PairView]) -> str:
    lines = ["# Router upgrades: newest release against the pin", "",
             "Per stack pair: the checks whose verdict flipped (fixed, broke, changed), with the layer the "
             "attribution named and the number of tests, then the checks failing in both releases for another "
             "reason. Built from `conformance report compare`'s data.", ""]
    for router in sorted({v.pinned.router for v in views}):
        lines += [f"## {ROUTER_NAMES.get(router, router)}", ""]
        for view in (v for v in views if v.pinned.router == router):
            lines.append(f"### {view.pinned.name} -> {view.latest.name}")
            lines.append("")
            if view.missing:
                lines += [f"Not compared: {view.missing}.", ""]
                continue
            lines += [f"{_version(view, 'a')} -> {_version(view, 'b')}", ""]
            counts = ", ".join(f"{d} {sum(view.moved[d].values())}" for d in DIRECTIONS)
            lines += [f"Tests that moved: {counts}; same check, new reason: {len(view.new_reasons)}.", ""]
            if any(view.moved[d] for d in DIRECTIONS):
                lines += ["| upgrade | check | layer | tests |", "|---|---|---|---|"]
                for d in DIRECTIONS:
                    for (check, layer), n in sorted(view.moved[d].items()):
                        lines.append(f"| {d} | `{check}` | {layer} | {n} |")
                lines.append("")
            if view.new_reasons:
                lines += ["| same check, new reason | test | before | after |", "|---|---|---|---|"]
                for test, check, before, after in view.new_reasons:
                    lines.append(f"| `{check}` | `{test}` | {before} | {after} |")
                lines.append("")
    return "\n".join(lines) + "\n"


def write_pages(reports: Path) -> list[Path]:
    views = [pair_view(reports, a, b) for a, b in stack_pairs()]
    upgrade = reports / "upgrade.md"
    upgrade.write_text(render_markdown(views), encoding="utf-8")
    return [upgrade, write_version_matrix(reports)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.peers.upgrade", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=Path, default=Path(__file__).resolve().parents[2] / "reports" / "peers")
    args = ap.parse_args(argv)
    if not args.reports.is_dir():
        print(f"{args.reports} is not a folder: run .ci/peers/run-all first (it writes reports/peers/), "
              "or give --reports the folder it wrote", file=sys.stderr)
        return 2
    for path in write_pages(args.reports):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
