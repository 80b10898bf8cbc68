"""What a refusal says: the target's error text, and the request field it names.

Rules:
- `error_text(body)` reads the message from any common error envelope (Anthropic, OpenAI,
  FastAPI/pydantic `detail` lists with their `loc`), else the body text; clipped to 600
  characters, so a report stays readable whatever the target sent.
- `named_field(message, request)` is the JSON pointer of the request field an error message
  complains about, or None: the most specific match wins (a sub-key over its parent); words
  that error prose uses anyway (model, stream, messages, ...) count only when written as a
  field (quoted, `body.x`, `x:`, `x=`), so "model group 'x' failed" names no field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from conformance.core.bounded_json import parse as parse_json


def error_text(body: bytes) -> str:
    """The target's error message from any common envelope, else the body text (clipped)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        doc = parse_json(text)
    except (json.JSONDecodeError, ValueError):
        return text[:600]
    parts: list[str] = []

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(node, dict):
            for key in ("message", "msg", "detail", "error"):
                val = node.get(key)
                if isinstance(val, str) and val:
                    parts.append(val)
                elif isinstance(val, (dict, list)):
                    walk(val, depth + 1)
            loc = node.get("loc")
            if isinstance(loc, list) and loc:
                parts.append("at " + ".".join(str(x) for x in loc))
        elif isinstance(node, list):
            for item in node[:5]:
                walk(item, depth + 1)

    walk(doc)
    return ("; ".join(dict.fromkeys(parts)) or text)[:600]


def _field_paths(body: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """(name, JSON pointer) of request fields worth naming: top-level keys and their sub-keys."""
    out: list[tuple[str, str]] = []
    if not isinstance(body, dict) or depth > 1:
        return out
    for key, val in body.items():
        ptr = f"{prefix}/{key}"
        out.append((key, ptr))
        if isinstance(val, dict):
            out.extend(_field_paths(val, ptr, depth + 1))
    return out


_PROSE_WORDS = frozenset({"model", "stream", "type", "messages", "content", "system", "tools", "input", "text"})


def named_field(message: str, body: Any) -> str | None:
    """The JSON pointer of the request field an error message complains about, if it names one.

    Prefers the most specific match (a sub-key like `output_config/effort` over `output_config`),
    then top-level keys the error names; `role: system` inside messages is recognised by wording.
    """
    if not message or not isinstance(body, dict):
        return None
    low = message.lower()
    hits: list[tuple[int, int, str]] = []
    for name, ptr in _field_paths(body):
        word = re.escape(name.lower())
        if name.lower() in _PROSE_WORDS:
            # Words error prose uses anyway ("LiteLLM: model group 'x' failed", "the stream
            # ended") count only when written as a field: quoted, `body.x`, `x:` or `x=`.
            m = re.search(r"(['\"`])" + word + r"\1|\bbody\." + word + r"\b|(?<![a-z0-9_.])" + word + r"\s*[:=]", low)
        else:
            m = re.search(r"(?<![a-z0-9_])" + word + r"(?![a-z0-9_])", low)
        if m:
            hits.append((ptr.count("/"), -m.start(), ptr))
    if re.search(r"\brole\b", low) and "system" in low and isinstance(body.get("messages"), list):
        for i, msg in enumerate(body["messages"]):
            if isinstance(msg, dict) and msg.get("role") == "system":
                hits.append((3, 0, f"/messages/{i}/role"))
                break
    if not hits:
        return None
    hits.sort(reverse=True)
    return hits[0][2]
