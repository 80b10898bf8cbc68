"""`conformance checks`: list every registered check id with its one-line title."""

from __future__ import annotations

NAME = "checks"
HELP = "list every check id with its one-line description"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print as JSON")
    parser.add_argument("--area", help="only checks whose id starts with AREA (e.g. anthropic)")


def run(args) -> int:
    import json

    from conformance.core.registry import registered as load_all

    specs = [s for s in load_all() if not args.area or s.id.startswith(args.area)]
    if args.json:
        print(json.dumps([s.__dict__ for s in specs], indent=1))
        return 0
    width = max((len(s.id) for s in specs), default=10)
    for s in specs:
        sev = "" if s.severity == "error" else f" [{s.severity}]"
        print(f"{s.id:<{width}}  {s.title}{sev}")
    return 0
