"""`conformance baseline migrate FILE...`: re-key baselines written with release test keys.

Test keys name client and case (`test_replay.py::test_replay[claude-code/default]`); a baseline
written when keys carried the release (`[claude-code/2.1.197/default]`) is rewritten in place, and
the release it was measured on is kept in its `client_versions` (conformance.report.baseline).
Exit 0: every file migrated; 2: a file that is not a baseline (one line each on stderr, the other
files still migrated).
"""

from __future__ import annotations

import sys

from conformance.report.baseline import BaselineError, migrate

NAME = "baseline"
HELP = "baseline files: `migrate` re-keys a baseline written with client releases in its test keys"


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("migrate",), help="what to do")
    parser.add_argument("files", nargs="+", metavar="FILE", help="baseline JSON files (rewritten in place)")


def run(args) -> int:
    status = 0
    for name in args.files:
        try:
            changed, releases = migrate(name)
        except BaselineError as exc:
            print(f"conformance baseline migrate: {name}: {exc}", file=sys.stderr)
            status = 2  # bad input, not a conformance failure
            continue
        measured = ", ".join(f"{c} {v}" for c, v in releases.items()) or "no release named"
        print(f"{name}: {changed} key(s) re-keyed; measured on {measured}")
    return status
