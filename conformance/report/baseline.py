"""The CI gate: a baseline file of a stack's known failures, with reasons.

Rules:
- Format (JSON, versioned): `{"format": "conformance.baseline", "version": 1, "target": ...,
  "known_failures": [{"test": "test_replay.py::test_replay[claude-code/2.1.197/default]",
  "checks": ["anthropic.stream.stop_sequence_present"], "reason": "vLLM #55324, fix in 0.12"}]}`.
  `test` is the stable test key (module file name :: test name), independent of where the
  suite is installed.
- With a baseline the run fails on any change either way: a test failing with a check id the
  baseline does not list (new failure), or a listed failure that no longer happens (the stack
  got fixed: update the baseline). A test failing exactly as listed is reported as xfailed.
- `write(path, failures)` keeps the reasons already written for entries that are still there,
  so re-writing a baseline does not lose the explanations a human added.
- Test keys name client and case, not the client's release (`conformance.suite.cases`), so a
  baseline survives a release change. `migrate_key` / `migrate(path)` (`conformance baseline
  migrate FILE...`) re-key a baseline written with release keys (`[claude-code/2.1.197/default]`
  -> `[claude-code/default]`) and record the releases it was measured on in `client_versions`;
  everything else in the file is kept as it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.core.jsonfile import read_json
from conformance.core.secrets import scrub_text

FORMAT = "conformance.baseline"
VERSION = 1
TODO_REASON = "TODO: say why this failure is known (issue link, version with the fix)"


class BaselineError(ValueError):
    pass


@dataclass
class Baseline:
    known: dict[str, dict[str, str]] = field(default_factory=dict)  # test key -> check id -> reason
    target: str = ""
    path: Path | None = None

    def for_test(self, key: str) -> dict[str, str]:
        return self.known.get(key, {})


def load(path: Path | str) -> Baseline:
    path = Path(path)
    doc = read_json(path, BaselineError,
                    missing="baseline file {path} does not exist; write one with --conformance-baseline-write {path}",
                    not_json="baseline file {path} is not JSON ({why})")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise BaselineError(
            f"{path} is not a conformance baseline (format {doc.get('format') if isinstance(doc, dict) else None!r}, "
            f"version {doc.get('version') if isinstance(doc, dict) else None!r}; expected {FORMAT!r} version {VERSION})")
    known: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(doc.get("known_failures", [])):
        try:
            test, checks = entry["test"], entry["checks"]
        except (KeyError, TypeError):
            raise BaselineError(f"{path}: known_failures[{i}] needs 'test' and 'checks'") from None
        reason = entry.get("reason", "")
        for check in checks:
            known.setdefault(test, {})[check] = reason
    return Baseline(known, doc.get("target", ""), path)


def write(path: Path | str, failures: dict[str, set[str]], *, target: str = "", messages: dict | None = None) -> Path:
    """Write a baseline listing `failures` (test key -> failing check ids)."""
    path = Path(path)
    old: dict[str, dict[str, str]] = {}
    if path.exists():
        try:
            old = load(path).known
        except BaselineError:
            old = {}
    entries = []
    for test in sorted(failures):
        checks = sorted(failures[test])
        reasons = [old.get(test, {}).get(c) for c in checks]
        reason = next((r for r in reasons if r and r != TODO_REASON), None)
        if reason is None:
            hint = (messages or {}).get(test)
            reason = TODO_REASON + (f" — first seen: {hint}" if hint else "")
        entries.append({"test": test, "checks": checks, "reason": reason})
    doc = {"format": FORMAT, "version": VERSION, "target": target, "known_failures": entries}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n"), encoding="utf-8")
    return path


def compare(known: dict[str, str], failing: set[str]) -> tuple[set[str], set[str]]:
    """(new failures, known failures that no longer happen) for one test."""
    return failing - set(known), set(known) - failing


_RELEASE_KEY = re.compile(r"\[(?P<client>[a-z][a-z0-9-]*)/(?P<version>\d+(?:\.\d+)+[\w.+-]*)/")


def migrate_key(key: str) -> tuple[str, tuple[str, str] | None]:
    """(the key without the client's release, (client, release) it named or None)."""
    m = _RELEASE_KEY.search(key)
    if not m:
        return key, None
    return key[:m.start()] + f"[{m['client']}/" + key[m.end():], (m["client"], m["version"])


def migrate(path: Path | str) -> tuple[int, dict[str, str]]:
    """Re-key one baseline file in place; returns (keys changed, client -> release measured on)."""
    path = Path(path)
    load(path)  # a clear error if it is not a baseline
    doc = json.loads(path.read_text(encoding="utf-8"))
    changed, releases = 0, dict(doc.get("client_versions") or {})
    for entry in doc.get("known_failures", []):
        new, release = migrate_key(entry["test"])
        if release is not None:
            client, version = release
            if releases.setdefault(client, version) != version:
                raise BaselineError(f"{path}: {entry['test']} names {client} {version}, other keys "
                                    f"{releases[client]}: one baseline is measured on one release per client")
            entry["test"], changed = new, changed + 1
    if releases:
        doc["client_versions"] = dict(sorted(releases.items()))
    path.write_text(scrub_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n"), encoding="utf-8")
    return changed, releases
