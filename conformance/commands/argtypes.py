"""The argument types every `conformance` subcommand uses, and the parser that words their errors.

Rules:
- Bad input gets one line and exit 2: `OneLineParser.error` prints `conformance COMMAND: what is
  wrong` and how to see the usage, never argparse's usage block or a traceback.
- A type checks its text and returns the value (argparse reports its ArgumentTypeError under the
  option's name): `port` (0-65535, 0: a free one), `listen_address` (HOST:PORT), `http_url`
  (http or https, a host, a valid port: the only targets the suite can talk to),
  `positive_number` (a finite number above 0: scales and rates), `writable_folder` (a folder
  that exists and may be written, or may be created).
- A type reads nothing but its text and the file system's answers about the path; it creates and
  binds nothing (the command does that, after every argument is good).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

PORT_RANGE = "a whole number from 0 to 65535 (0: any free port)"


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit 2."""

    def error(self, message: str):  # argparse's hook: must not return
        sys.stderr.write(f"{self.prog}: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give {PORT_RANGE}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give {PORT_RANGE}")
    return value


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT -> (host, port); an IPv6 host may be bracketed: [::1]:8089."""
    host, sep, number = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT such as 127.0.0.1:8089")
    return host, port(number)


def http_url(text: str) -> str:
    """An http(s) base URL with a host; returned as given."""
    hint = "give the base URL of the router or engine, e.g. http://127.0.0.1:8000"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port out of range or not a number
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({exc}); {hint}") from None
    if parts.scheme not in ("http", "https"):
        what = f"the scheme {parts.scheme!r}" if parts.scheme else "no http:// or https://"
        raise argparse.ArgumentTypeError(f"{text!r} has {what}: the suite speaks HTTP only; {hint}")
    if not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} names no host; {hint}")
    return text


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: give a positive number, e.g. 2 or 0.5") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} must be a positive finite number (above 0), e.g. 2 or 0.5")
    return value


def writable_folder(text: str) -> Path:
    """A folder that exists and may be written, or whose first existing ancestor is a folder that
    may be written (the command creates it)."""
    path = Path(text)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        where = "is a file" if probe == path else f"is under {probe}, which is a file"
        raise argparse.ArgumentTypeError(f"{text} {where}: give a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {probe} may not be written by this user: give a folder you own")
    return path
