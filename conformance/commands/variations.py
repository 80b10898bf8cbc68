"""`conformance variations`: list the reference engine's valid variations (for `conformance engine
--variation NAME`): each with what it does, the spec clause or real server that behaves so, the
wires it changes and the variations it excludes; last, the set documented to run at once."""

from __future__ import annotations

import dataclasses
import json

from conformance.engine.variations import ALL_WIRES, COMPATIBLE, VARIATIONS

NAME = "variations"
HELP = "list the reference engine's valid variations (for `conformance engine --variation NAME`)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print as JSON: {variations: {name: {description, source, wires, excludes}}, compatible}")


def run(args) -> int:
    if args.json:
        print(json.dumps({"variations": {n: dataclasses.asdict(v) for n, v in VARIATIONS.items()},
                          "compatible": list(COMPATIBLE)}, indent=1))
        return 0
    width = max(len(n) for n in VARIATIONS)
    pad = " " * (width + 2)
    for name, v in VARIATIONS.items():
        print(f"{name:<{width}}  {v.description}")
        print(f"{pad}as: {v.source}")
        if v.wires != ALL_WIRES:
            print(f"{pad}wires: {', '.join(v.wires)} (a no-op elsewhere)")
        if v.excludes:
            print(f"{pad}excludes: {', '.join(v.excludes)}")
    print(f"\ncompatible at once: {' '.join(COMPATIBLE)}")
    return 0
