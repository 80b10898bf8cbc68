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
- `redact_split_values`: a folder the model streams in pieces (a tool call's arguments cut across
  delta events) is replaced in the pieces too, the value joined, replaced (same length) and cut
  back at the same places, so the deltas still add up to the done event that repeats it whole.
"""

from __future__ import annotations

import dataclasses
import json
import re
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


def redact_chunks(chunks: list, redact_bytes: Callable[[bytes], bytes],
                  replace_split: Callable[[str], str] | None = None) -> list:
    """`chunks` (each with `.data` bytes) redacted as a whole (module rules), as new chunks;
    `replace_split` (length-keeping) also reaches values split across stream events."""
    joined = b"".join(c.data for c in chunks)
    if replace_split is not None:
        text = joined.decode("utf-8", "surrogateescape")
        split = redact_split_values(text, replace_split).encode("utf-8", "surrogateescape")
        joined = split if len(split) == len(joined) else joined
    whole = redact_bytes(joined)
    if len(whole) != len(joined):
        return [dataclasses.replace(c, data=redact_bytes(c.data)) for c in chunks]
    out, pos = [], 0
    for c in chunks:
        out.append(dataclasses.replace(c, data=whole[pos:pos + len(c.data)]))
        pos += len(c.data)
    return out



# -- values split across stream events --------------------------------------------------------
def _delta_pieces(event: dict) -> list[tuple[tuple, str]]:
    """(group, text) of each streamed piece an event carries: Responses `*.delta`, Anthropic
    `content_block_delta`, chat `choices[].delta` content and tool-call arguments."""
    out: list[tuple[tuple, str]] = []
    kind = event.get("type")
    if isinstance(kind, str) and kind.endswith(".delta") and isinstance(event.get("delta"), str):
        out.append(((kind, event.get("item_id"), event.get("output_index"), event.get("content_index")),
                    event["delta"]))
    delta = event.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        for key in ("partial_json", "text", "thinking"):
            if isinstance(delta.get(key), str):
                out.append((("block", event.get("index"), key), delta[key]))
    for choice in event.get("choices") or []:
        d = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("content"), str):
            out.append((("choice", choice.get("index"), "content"), d["content"]))
        for call in d.get("tool_calls") or []:
            args = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if isinstance(args, str):
                out.append((("choice", choice.get("index"), "call", call.get("index")), args))
    return out


def redact_split_values(text: str, replace: Callable[[str], str]) -> str:
    """A stream's text with `replace` (which keeps lengths) applied to each streamed value as a
    whole: the pieces of one value (one call's arguments, one text block) are joined, replaced,
    and cut back at the same places, so a folder split across delta events is replaced in every
    piece, consistently with the done events that repeat it whole."""
    lines = text.split("\n")
    pieces: dict[tuple, list[tuple[int, str]]] = {}
    for n, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict):
            for group, piece in _delta_pieces(event):
                pieces.setdefault(group, []).append((n, piece))
    for parts in pieces.values():
        whole = "".join(p for _, p in parts)
        new = replace(whole)
        if new == whole or len(new) != len(whole):
            continue
        pos = 0
        for n, piece in parts:
            fresh = new[pos:pos + len(piece)]
            pos += len(piece)
            if fresh != piece:
                lines[n] = _replace_value(lines[n], piece, fresh)
    return "\n".join(lines)


_VALUE_KEYS = "delta|partial_json|text|thinking|content|arguments"


def _replace_value(line: str, old: str, new: str) -> str:
    """`line` with the first JSON string value `old` of a streamed-value key replaced by `new`."""
    for ascii_only in (False, True):
        old_json, new_json = (json.dumps(v, ensure_ascii=ascii_only) for v in (old, new))
        rx = re.compile(rf'("(?:{_VALUE_KEYS})"\s*:\s*){re.escape(old_json)}')
        found = rx.search(line)
        if found:
            return line[:found.start()] + found.group(1) + new_json + line[found.end():]
    return line
