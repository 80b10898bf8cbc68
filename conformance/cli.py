"""The `conformance` command: a thin dispatcher over subcommand modules.

Rules:
- Each subcommand lives in `conformance/commands/<name>.py` and defines `NAME`, `HELP`,
  `add_arguments(parser)` and `run(args) -> int`. This file discovers them; it holds no logic.
- Exit codes: 0 success, 1 conformance failures found, 2 bad usage or unreadable input (with a
  message that says what, why and how to fix). Unexpected exceptions are not swallowed.
- Subcommand modules import heavy things (SDKs, servers) inside `run`, so `conformance --help`
  stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from conformance import __version__


def _commands() -> list:
    import conformance.commands as pkg

    mods = [importlib.import_module(f"conformance.commands.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)]
    return sorted((m for m in mods if hasattr(m, "NAME")), key=lambda m: m.NAME)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conformance",
        description="Agent-loop conformance suite for LLM serving stacks (routers and engines).",
    )
    parser.add_argument("--version", action="version", version=f"conformance {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # `conformance run` hands everything it does not know to pytest, so it parses its own args.
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if extra and not getattr(args, "_accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    return int(args._run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
