"""`conformance run [--target URL] [pytest args...]`: run the whole suite, write the reports.

Rules:
- With no target (and no CONFORMANCE_TARGET), it starts the embedded reference engine as a real
  subprocess (`conformance.engine.launch.spawn_engine`, optionally with `--fault NAME` and
  `--variation NAME`) and runs
  the suite against it, then stops the engine.
- Everything it does not know goes to pytest unchanged (`-n 2`, `-k ...`, `--conformance-*`).
  It adds `--junitxml=<report dir>/junit.xml` unless the user passed a JUnit path.
- Exit code: 0 all passed, 1 conformance failures, 2 bad usage or the run could not happen.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conformance import __version__
from conformance.commands.argtypes import http_url
from conformance.engine.launch import EngineStartError, spawn_engine
from conformance.report.artifacts import refusal as report_dir_refusal

NAME = "run"
HELP = "run the conformance suite (against the embedded reference engine when no --target is given)"
DESCRIPTION = (
    "Run the whole conformance suite and write reports/ (summary.md, junit.xml, failure folders). "
    "Without --target it starts the embedded reference engine. Unknown arguments are passed to pytest, "
    "e.g. `conformance run --target http://127.0.0.1:4000 -n 2 --conformance-api anthropic`."
)


def add_arguments(parser) -> None:
    parser.add_argument("--target", type=http_url, metavar="URL", help="router or engine base URL (env CONFORMANCE_TARGET)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME",
                        help="with no --target: start the embedded engine with this fault (repeatable)")
    parser.add_argument("--variation", action="append", default=[], metavar="NAME",
                        help="with no --target: start the embedded engine with this valid variation (repeatable; "
                             "`conformance variations` lists them)")
    parser.set_defaults(_accepts_extra=True)


def _report_dir(extra: list[str]) -> str:
    for i, arg in enumerate(extra):
        if arg.startswith("--conformance-report-dir="):
            return arg.split("=", 1)[1]
        if arg == "--conformance-report-dir" and i + 1 < len(extra):
            return extra[i + 1]
    return "reports"


def run(args) -> int:
    extra = list(getattr(args, "extra", []) or [])
    target = args.target or os.environ.get("CONFORMANCE_TARGET")
    if target and (args.fault or args.variation):
        print("conformance run: --fault and --variation apply to the embedded engine; they cannot be combined "
              "with --target", file=sys.stderr)
        return 2
    refused = report_dir_refusal(_report_dir(extra))  # before an engine starts: one line, exit 2
    if refused:
        print(f"conformance run: {refused}", file=sys.stderr)
        return 2
    # `conformance` is imported before pytest starts, so its plugin module cannot be rewritten.
    # The suite has no async fixtures; naming a loop scope only silences pytest-asyncio's warning.
    pytest_args = ["-W", "ignore::pytest.PytestAssertRewriteWarning", "-o", "asyncio_default_fixture_loop_scope=function",
                   *extra]
    if not any(a.startswith(("--junitxml", "--junit-xml")) for a in extra):
        pytest_args.append(f"--junitxml={Path(_report_dir(extra)) / 'junit.xml'}")

    def go(url: str) -> int:
        code = pytest.main([f"--target={url}", *pytest_args])
        code = int(code)
        return 0 if code == 0 else 1 if code == 1 else 2

    if target:
        return go(target)
    engine_args: list[str] = []
    for fault in args.fault:
        engine_args += ["--fault", fault]
    for name in args.variation:
        engine_args += ["--variation", name]
    try:
        engine = spawn_engine(*engine_args)
    except EngineStartError as exc:
        print(f"conformance run: the embedded reference engine did not start: {exc}", file=sys.stderr)
        return 2
    if not any(a.startswith("--conformance-engine-version") for a in pytest_args):
        label = (f"reference engine (conformance {__version__})" + "".join(f" --fault {f}" for f in args.fault)
                 + "".join(f" --variation {v}" for v in args.variation))
        pytest_args.append(f"--conformance-engine-version={label}")
    with engine:
        faults = f" with fault(s) {', '.join(args.fault)}" if args.fault else ""
        print(f"conformance run: no --target given; testing the embedded reference engine at {engine.url}{faults}",
              flush=True)
        return go(engine.url)
