"""The corpus: capture files under a folder, read one way (the one corpus scan).

Rules:
- `iter_capture_files(root)` is every capture file under `root` (a file is itself), sorted, the
  manifest left out; `scan(root)` loads them one at a time, as (path, capture). A file that is
  not a capture is an error (`CaptureFormatError`, naming the file) unless the caller asks to skip
  it (`skip_unreadable`: a template search reads whatever it finds).
- `newest_first(captures)` orders releases by the one version key (`conformance.core.versions`),
  newest first, stable within a release.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from conformance.capture.format import FORMAT, Capture, CaptureFormatError, load_capture
from conformance.core.versions import version_key


def iter_capture_files(root: Path | str) -> Iterator[Path]:
    """Every capture file under `root` (a file is yielded as itself), sorted; skips manifest.json."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    for p in sorted(root.rglob("*.json")):
        if p.name != "manifest.json":
            yield p


def is_capture_file(path: Path | str) -> bool:
    """Whether `path` holds a capture (its `format`), not some other JSON that sits beside the
    captures (a client's own state in a scratch HOME under the output folder, say)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: let load_capture say what is wrong with it
    return isinstance(data, dict) and data.get("format") == FORMAT


def scan(root: Path | str, *, client: str | None = None,
         skip_unreadable: bool = False) -> Iterator[tuple[Path, Capture]]:
    """(path, capture) for each capture under `root` (of one client when `client` is given)."""
    for path in iter_capture_files(root):
        try:
            capture = load_capture(path)
        except CaptureFormatError:
            if skip_unreadable:
                continue
            raise
        if client is None or capture.client == client:
            yield path, capture


def load_captures(root: Path | str) -> list[Capture]:
    """Every capture under `root` (a file that is not one is an error)."""
    return [capture for _, capture in scan(root)]


def newest_first(captures: list[Capture]) -> list[Capture]:
    """The captures ordered by release, newest first (stable within a release)."""
    return sorted(captures, key=lambda c: version_key(c.client_version), reverse=True)
