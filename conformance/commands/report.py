"""`conformance report compare RUN_A RUN_B` and `conformance report html RUN`: reports from results folders.

Rules:
- `compare` reads two results folders (`conformance.report.compare`), prints the Markdown
  comparison and writes `compare.md` and `compare.html` into `--out` (default: the current
  folder's `reports/compare/`). Runs of different APIs, or a folder without a results record,
  exit 2 with the reason and how to fix it.
- `html` re-renders `report.html` from a report folder's results record (e.g. one copied from CI).
- Exit codes: 0 done, 2 unusable input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conformance.core.bounded_json import parse as parse_json
from conformance.report.compare import CompareError, compare, load_run, render_html, render_markdown
from conformance.report.html import write_html

NAME = "report"
HELP = "reports from results folders: compare two runs, or re-render report.html"
DESCRIPTION = (
    "`conformance report compare RUN_A RUN_B` lists the verdicts that flipped between two runs (by check and "
    "layer), every figure as a ratio B/A and which phase (prefill, decode) moved beyond the spread of its "
    "repeats; it writes compare.md and compare.html. `conformance report html RUN` re-renders report.html."
)


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="report_command", metavar="WHAT")
    c = sub.add_parser("compare", help="what changed between two runs of the same suite")
    c.add_argument("run_a", metavar="RUN_A", help="the first run's report or results folder (the 'before')")
    c.add_argument("run_b", metavar="RUN_B", help="the second run's report or results folder (the 'after')")
    c.add_argument("--out", metavar="DIR", default="reports/compare",
                   help="where compare.md and compare.html go (default reports/compare)")
    h = sub.add_parser("html", help="re-render report.html from a report folder's results")
    h.add_argument("run", metavar="RUN", help="a report folder (holding results/)")


def run(args) -> int:
    what = getattr(args, "report_command", None)
    if what == "compare":
        try:
            result = compare(load_run(args.run_a), load_run(args.run_b))
        except (CompareError, ValueError, OSError) as exc:  # ValueError: a line that is not a record
            print(f"conformance report compare: {exc}", file=sys.stderr)
            return 2
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        md = render_markdown(result)
        (out / "compare.md").write_text(md, encoding="utf-8")
        (out / "compare.html").write_text(render_html(result), encoding="utf-8")
        try:
            print(md)
            print(f"written: {out / 'compare.md'}, {out / 'compare.html'}")
            sys.stdout.flush()
        except BrokenPipeError:  # `| head` closed the pipe: the files are written, leave quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if what == "html":
        folder = Path(args.run)
        if not (folder / "results").is_dir():
            print(f"conformance report html: {folder} has no results/ folder; give the report folder of a run "
                  "(the one holding results/)", file=sys.stderr)
            return 2
        meta_file = folder / "results" / "run.json"
        try:
            meta = parse_json(meta_file.read_bytes()).get("facts", {}) if meta_file.is_file() else {}
            print(write_html(folder, {k: str(v) for k, v in meta.items() if k != "markers"}))
        except (ValueError, OSError, AttributeError) as exc:  # a line that is not a record; run.json not an object
            print(f"conformance report html: {exc}; re-run the suite to write a fresh report folder",
                  file=sys.stderr)
            return 2
        return 0
    print("conformance report: say what: `conformance report compare RUN_A RUN_B` or `conformance report html RUN`",
          file=sys.stderr)
    return 2
