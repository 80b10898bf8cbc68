"""The `conformance` command: a thin dispatcher over subcommand modules.

Rules:
- Each subcommand lives in `conformance/commands/<module>.py` and defines `NAME` (the module's
  name, `-` for `_`), `HELP`, `add_arguments(parser)` and `run(args) -> int`. This file discovers
  them; it holds no logic.
- Exit codes: 0 success, 1 conformance failures found, 2 bad usage or unreadable input (with a
  message that says what, why and how to fix): argparse's own errors are one line too
  (`conformance.commands.argtypes.OneLineParser`, the parser of every subcommand). Unexpected exceptions are not swallowed.
- Subcommand modules import what they use at module top, like every module. A command line that
  names a subcommand loads that subcommand's module alone (`conformance engine`, which the tests
  spawn, loads no judge module); `conformance --help` and an unknown name load them all.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import conformance.commands
from conformance import __version__
from conformance.commands.argtypes import OneLineParser
from conformance.core import secrets


def _commands(name: str | None = None) -> list:
    """The subcommand modules: the one `name` names, else all of them."""
    found = [m.name for m in pkgutil.iter_modules(conformance.commands.__path__)]
    own = name.replace("-", "_") if name else None
    mods = [importlib.import_module(f"conformance.commands.{m}") for m in ([own] if own in found else found)]
    return sorted((m for m in mods if hasattr(m, "NAME")), key=lambda m: m.NAME)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of the one `command` names."""
    parser = OneLineParser(
        prog="conformance",
        description="Agent-loop conformance suite for LLM serving stacks (routers and engines).",
    )
    parser.add_argument("--version", action="version", version=f"conformance {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _commands(command):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
    # `conformance run` hands everything it does not know to pytest, so it parses its own args.
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if extra and not getattr(args, "_accepts_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    # the one scrubber: the key and URL credentials a command is given never reach its console
    secrets.register_command_line(args)
    with secrets.scrubbed_console():
        return int(args._run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
