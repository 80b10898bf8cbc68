"""Re-redact capture files already written, in place, with the rules added since they were
recorded: the corpus is brought up to the redactor of today without re-running its clients.

    python -m conformance.capture.reredact [--only folders|echoes] FILE...

Rules:
- Folders (`conformance.capture.folders`): the working folders the file's requests name, the
  recorder's home folder and login name become the same-length placeholders a new capture gets,
  everywhere in the file's text. Run it (`--only folders`) on files that still hold a real
  folder: a filled (filler) path in a working-directory line looks like one too.
- Echoed prose (`conformance.capture.across_chunks`): the prose a Responses answer repeats from
  its request in `response.created` / `response.completed` (`instructions`, tool descriptions)
  gets the filler the request got (`fill_prose`, deterministic), the stream's bytes otherwise
  unchanged.
- A file whose text does not change is not rewritten.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.capture.across_chunks import EchoedProse, redact_chunks
from conformance.capture.folders import LocalFolders, own_home, own_login
from conformance.capture.format import Capture, load_capture, save_capture
from conformance.capture.redact import fill_prose

ECHOED = ("instructions", "tools")
PARTS = ("folders", "echoes")


def refolder_text(text: str) -> str:
    """A capture file's text with its folders and login name replaced (module rules)."""
    folders = LocalFolders((own_home(),), own_login())
    for exchange in json.loads(text).get("exchanges", []):
        folders.learn((exchange.get("request") or {}).get("body"))
    return folders.replace(text)


def _echoed(chunks: list) -> list[dict]:
    """The `response` objects a Responses stream's events carry."""
    out = []
    for line in b"".join(c.data for c in chunks).decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            try:
                event = json.loads(line[5:])
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("response"), dict):
                out.append(event["response"])
    return out


def refill_echoes(capture: Capture) -> int:
    """Fill the echoed prose of every exchange (module rules); returns how many changed."""
    changed = 0
    for exchange in capture.exchanges:
        if exchange.response is None:
            continue
        echo = EchoedProse()
        for response in _echoed(exchange.response.chunks):
            real = {k: response[k] for k in ECHOED if k in response}
            echo.learn(real, {k: v for k, v in fill_prose(real).items() if k in ECHOED})

        def fill(data: bytes, echo=echo) -> bytes:
            return echo.replace(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

        chunks = redact_chunks(exchange.response.chunks, fill)
        if [c.data for c in chunks] != [c.data for c in exchange.response.chunks]:
            exchange.response.chunks[:] = chunks
            changed += 1
    return changed


def reredact(path: Path, parts: tuple[str, ...] = PARTS) -> bool:
    """Re-redact one file in place (the parts named); whether it changed."""
    text = path.read_text(encoding="utf-8")
    if "folders" in parts:
        path.write_text(refolder_text(text), encoding="utf-8")
    if "echoes" in parts:
        capture = load_capture(path)
        if refill_echoes(capture):
            save_capture(capture, path)
    return path.read_text(encoding="utf-8") != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.capture.reredact", description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=PARTS, help="one part of the rules (default: both)")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.files:
        print(("changed   " if reredact(path, (args.only,) if args.only else PARTS) else "unchanged ") + str(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
