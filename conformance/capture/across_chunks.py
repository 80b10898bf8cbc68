"""Redaction of a response as a whole: what it echoes from its request, and what a network chunk
boundary splits.

Rules (used by `conformance.capture.redact.Redactor`):
- `EchoedProse`: with the prose filler on, each string the filler changed in a request's
  `instructions` and `tools` is remembered as the inside of a JSON string (escaped both ways:
  UTF-8 kept, and `\\uXXXX`) with its filler, so a Responses answer that repeats them in
  `response.created` / `response.completed` carries the filler too. Strings under MIN_ECHO
  characters are not remembered: they would hit unrelated text.
- `redact_chunks`: a response's chunks are redacted joined, so a path or an echoed description cut
  by a chunk boundary is still found; when that keeps the byte length (placeholders and filler
  keep it) the chunks keep their boundaries and arrival times, else each chunk is redacted on
  its own (a secret that became `<redacted:...>` changes the size, and no boundary would be true).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

MIN_ECHO = 16


class EchoedProse:
    def __init__(self) -> None:
        self._filler: dict[str, str] = {}  # JSON-escaped request prose -> its filler

    def learn(self, real: Any, filled: Any) -> None:
        """Remember each string `filled` changed in `real` (the same structure, filled)."""
        if isinstance(real, str) and isinstance(filled, str) and real != filled and len(real) >= MIN_ECHO:
            for ascii_only in (False, True):
                self._filler[json.dumps(real, ensure_ascii=ascii_only)[1:-1]] = json.dumps(
                    filled, ensure_ascii=ascii_only)[1:-1]
        elif isinstance(real, list) and isinstance(filled, list):
            for a, b in zip(real, filled, strict=True):
                self.learn(a, b)
        elif isinstance(real, dict) and isinstance(filled, dict):
            for k, v in real.items():
                self.learn(v, filled.get(k))

    def replace(self, text: str) -> str:
        for prose, filler in self._filler.items():
            if prose in text:
                text = text.replace(prose, filler)
        return text


def redact_chunks(chunks: list, redact_bytes: Callable[[bytes], bytes]) -> list:
    """`chunks` (each with `.data` bytes) redacted as a whole (module rules), as new chunks."""
    joined = b"".join(c.data for c in chunks)
    whole = redact_bytes(joined)
    if len(whole) != len(joined):
        return [dataclasses.replace(c, data=redact_bytes(c.data)) for c in chunks]
    out, pos = [], 0
    for c in chunks:
        out.append(dataclasses.replace(c, data=whole[pos:pos + len(c.data)]))
        pos += len(c.data)
    return out

