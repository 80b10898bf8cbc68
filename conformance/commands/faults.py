"""`conformance faults`: list the reference engine's fault names, one line each."""

from __future__ import annotations

import json

from conformance.engine.faults import FAULTS

NAME = "faults"
HELP = "list the reference engine's fault modes (for `conformance engine --fault NAME`)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print as a JSON object name -> description")


def run(args) -> int:
    if args.json:
        print(json.dumps(FAULTS, indent=1))
        return 0
    width = max(len(n) for n in FAULTS)
    for name, text in FAULTS.items():
        print(f"{name:<{width}}  {text}")
    return 0
