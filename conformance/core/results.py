"""The results record: one JSON Lines record per check per exchange.

Rules:
- Every front end (JUnit properties, reports/summary.md, the peer matrix, the baseline gate)
  reads these records and never re-derives a verdict from raw data.
- A record is written once, by the code that decided the verdict. `outcome` is one of
  OUTCOMES; `unverifiable` is an honest "could not tell" (e.g. a router that only echoes the
  model alias), never a pass.
- Writing is append-only, one file per process (pytest-xdist workers each write their own
  `results-<worker>.jsonl`); `read_results` merges a folder. Records never contain secrets: they
  hold check ids, verdict text and paths to artifacts, not headers.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.core.bounded_json import parse as parse_json
from conformance.core.secrets import scrub_text
from conformance.core.verdict import OUTCOMES

RECORD_VERSION = 1


@dataclass
class Result:
    test_id: str  # pytest node id or "cli:<capture>"
    check_id: str  # registered check id
    outcome: str  # one of OUTCOMES
    target: str = ""
    api: str = ""  # anthropic | openai
    model: str = ""
    client: str = ""  # claude-code | opencode | scenario | probe
    client_version: str = ""
    case: str = ""  # capture case name or scenario id
    capture: str = ""  # capture file, relative to the corpus root when bundled
    turn: int | None = None
    layer: str = ""  # router | engine | both | unknown | "" (no attribution made)
    message: str = ""  # one line summary (first violation or the pass statement)
    violations: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # figures, mappings, evidence pointers
    artifacts: str = ""  # folder under reports/failures/
    versions: dict[str, str] = field(default_factory=dict)
    duration_s: float | None = None
    timestamp: float = field(default_factory=time.time)
    record_version: int = RECORD_VERSION

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        version = d.get("record_version", RECORD_VERSION)
        if version != RECORD_VERSION:
            raise ValueError(f"results record version {version} is not supported (this is {RECORD_VERSION})")
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


class ResultsWriter:
    """Append-only writer for one process. Thread-safe; flushes every record."""

    def __init__(self, folder: Path, worker: str | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        worker = worker or os.environ.get("PYTEST_XDIST_WORKER") or "main"
        self.path = self.folder / f"results-{worker}.jsonl"
        self._lock = threading.Lock()

    def write(self, result: Result) -> None:
        line = scrub_text(result.to_json())  # the one scrubber: no known secret reaches a record
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def write_all(self, results: Iterable[Result]) -> None:
        for r in results:
            self.write(r)


def read_results(folder_or_file: Path) -> list[Result]:
    """Read one .jsonl file or every results-*.jsonl in a folder, in timestamp order."""
    p = Path(folder_or_file)
    files = [p] if p.is_file() else sorted(p.glob("results-*.jsonl"))
    out: list[Result] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{f}: not a results file: it is not UTF-8 text ({exc})") from exc
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(Result.from_dict(parse_json(line)))
            except (ValueError, TypeError, AttributeError, KeyError) as exc:  # not JSON, or not a record's
                raise ValueError(f"{f}:{n}: not a results record: {exc}") from exc
    out.sort(key=lambda r: r.timestamp)
    return out
