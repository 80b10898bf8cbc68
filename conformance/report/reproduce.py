"""Reproduce lines: the `conformance replay` and pytest command lines a failure prints.

Rules:
- A line carries every option that shaped the request or its verdict (target, model or model
  map, API, deadlines, salt, the engine behind the router, size limits ...), so that run as
  printed, with the environment variable it names set, it sends what the suite sent and gets the
  same check id. Options that only decide where reports go (report folder, baseline files, the
  free-text versions) are left out: a reproduction must not overwrite the run it reproduces.
- The key is never written: a line that needs one reads it from KEY_VARIABLE, spelled
  `"$CONFORMANCE_API_KEY"` on the line (the only unquoted word, and it is a variable reference).
- Every other value is quoted with `shlex.quote`, whatever its source (a capture's path, its
  model names, a URL): a line is safe to paste into a shell.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

KEY_VARIABLE = "CONFORMANCE_API_KEY"
KEY_REFERENCE = f'"${KEY_VARIABLE}"'

# pytest option dests that decide only where a run's reports go, or are the key itself.
_NOT_REPRODUCED = {"conformance_report_dir", "conformance_baseline", "conformance_baseline_write",
                   "conformance_engine_version", "conformance_router_version", "conformance_api_key"}


def command_line(argv: Iterable[str], *, key_option: str | None = None) -> str:
    """`argv` quoted word by word; `key_option` (e.g. `--api-key`) reads the key from KEY_VARIABLE."""
    words = [shlex.quote(str(a)) for a in argv]
    if key_option:
        words.append(f"{key_option}={KEY_REFERENCE}" if key_option.startswith("--conformance") else
                     f"{key_option} {KEY_REFERENCE}")
    return " ".join(words)


def replay_line(capture: str, target: str, *, model_map: dict[str, str] | None = None, salt: str | None = None,
                deadlines: tuple[float, float, float] | None = None, with_key: bool = False,
                expect: dict[str, str] | None = None) -> str:
    """`conformance replay CAPTURE --target URL ...`: `model_map` captured -> sent model, `expect`
    sent -> the model expected to answer (a router alias), `deadlines` (connect, first content,
    total) in seconds when they are not the defaults."""
    argv = ["conformance", "replay", capture, "--target", target]
    for captured, sent in sorted((model_map or {}).items()):
        argv += ["--model-map", f"{captured}={sent}"]
    for sent, served in sorted((expect or {}).items()):
        argv += ["--expect-model", f"{sent}={served}"]
    if salt:
        argv += ["--salt", salt]
    if deadlines is not None:
        connect, first_content, total = deadlines
        argv += ["--deadline-connect", _seconds(connect), "--deadline-first-content", _seconds(first_content),
                 "--deadline-total", _seconds(total)]
    return command_line(argv, key_option="--api-key" if with_key else None)


def pytest_line(node: str, options: dict[str, Any], *, markexpr: str = "", with_key: bool = False) -> str:
    """`pytest NODE ...` with the run's conformance options (pytest dests `conformance_*` -> their
    values, as `config.option` holds them)."""
    argv = ["pytest", node, "-p", "no:cacheprovider"]
    if markexpr:
        argv += ["-m", markexpr]
    for dest, value in sorted(options.items()):
        if dest in _NOT_REPRODUCED or value is None or value is False:
            continue
        flag = "--target" if dest == "conformance_target" else "--" + dest.replace("_", "-")
        for one in value if isinstance(value, (list, tuple)) else [value]:
            argv.append(flag if one is True else f"{flag}={one}")
    return command_line(argv, key_option="--conformance-api-key" if with_key else None)


def _seconds(value: float) -> str:
    return f"{value:g}"
