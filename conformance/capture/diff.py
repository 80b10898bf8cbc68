"""Structural diff of two capture corpora (`conformance capture --diff OLD NEW`).

Rules:
- Captures are paired by (client, case), not version: the point is to see what a new client
  release changed. Exchanges inside a capture are paired by kind (method, path, with or without
  tools) and occurrence, so a title request racing the main request pairs the same way whatever
  order it arrived in.
- Only structure is compared, never prose or per-run values: body keys and their order; header
  names and the values of stable headers (anthropic-beta, anthropic-version, user-agent, x-app,
  ...; identifiers, secrets and content-length are compared by name only); tool names, order, keys
  and schemas with `description` strings removed; thinking, effort (output_config),
  context_management, max_tokens, stream settings, tool_choice, metadata keys; system prompt
  shape; message roles and content block types. Response status and content type only on request
  (`responses=True`, `--diff-responses`): they describe the upstream, not the client.
- A recapture of the same client versions diffs empty: that is the corpus regression test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.capture.format import Capture, Exchange, load_captures

# Request headers compared by name only: their values change per run or are redacted.
_VOLATILE_HEADERS = frozenset({"content-length", "host", "date", "connection", "x-stainless-retry-count",
                               # Codex: turn metadata (ids, a start time) and per-run ids
                               "x-codex-turn-metadata", "x-codex-window-id", "session-id", "thread-id",
                               "x-client-request-id"})
# Body keys whose value is compared as is (settings, not content).
_SETTING_KEYS = ("model", "max_tokens", "max_completion_tokens", "thinking", "output_config",
                 "context_management", "stream", "stream_options", "tool_choice", "temperature", "top_p",
                 "top_k", "stop", "stop_sequences", "reasoning_effort", "parallel_tool_calls", "service_tier")


@dataclass(frozen=True)
class Change:
    capture: str  # client/case
    where: str  # exchange label and dotted path, e.g. "POST /v1/messages#1 body.thinking.type"
    old: Any  # None with kind "added"
    new: Any  # None with kind "removed"
    kind: str  # added | removed | changed

    def render(self) -> str:
        if self.kind == "added":
            return f"  + {self.where}: {_short(self.new)}"
        if self.kind == "removed":
            return f"  - {self.where}: {_short(self.old)}"
        return f"  ~ {self.where}: {_short(self.old)} -> {_short(self.new)}"


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _shape(value: Any) -> Any:
    """Types and keys of a value, not its content."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_descriptions(v) for k, v in schema.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


def _content_shape(content: Any) -> Any:
    if isinstance(content, str):
        return "str"
    if isinstance(content, list):
        return [part.get("type", "?") if isinstance(part, dict) else type(part).__name__ for part in content]
    return type(content).__name__


def _tool_summary(tool: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(tool.get("function"), dict):  # OpenAI
        fn = tool["function"]
        name = fn.get("name", "?")
        return name, {"keys": list(tool), "function_keys": list(fn),
                      "schema": _strip_descriptions(fn.get("parameters"))}
    name = tool.get("name", tool.get("type", "?"))
    rest = {k: v for k, v in tool.items() if k not in ("name", "description", "input_schema")}
    return name, {"keys": list(tool), "settings": rest, "schema": _strip_descriptions(tool.get("input_schema"))}


def summarize_exchange(ex: Exchange, *, responses: bool = False) -> dict[str, Any]:
    """The structural summary of one exchange (what the diff compares); `responses` adds the
    answer's status and content type (off by default: they describe the upstream, not the client)."""
    req = ex.request
    headers: dict[str, Any] = {}
    for name, value in sorted(req.headers.items()):
        if name in _VOLATILE_HEADERS or "<redacted" in value or _looks_pseudonymous(value):
            headers[name] = "(present)"
        elif name == "anthropic-beta":
            headers[name] = [b.strip() for b in value.split(",")]
        else:
            headers[name] = value
    out: dict[str, Any] = {"request": {"method": req.method, "path": req.path, "query": req.query,
                                       "headers": headers}}
    body = req.body
    if isinstance(body, dict):
        b: dict[str, Any] = {"keys": list(body)}
        for key in _SETTING_KEYS:
            if key in body:
                b[key] = body[key]
        if isinstance(body.get("metadata"), dict):
            meta = body["metadata"]
            b["metadata"] = {"keys": list(meta)}
            uid = meta.get("user_id")
            if isinstance(uid, str):
                try:
                    parsed = json.loads(uid)
                    b["metadata"]["user_id_keys"] = list(parsed) if isinstance(parsed, dict) else type(parsed).__name__
                except ValueError:
                    b["metadata"]["user_id_keys"] = "str"
        if "system" in body:
            sys_ = body["system"]
            b["system"] = "str" if isinstance(sys_, str) else [
                {k: (v if k != "text" else "str") for k, v in blk.items()} if isinstance(blk, dict) else "?"
                for blk in sys_
            ]
        if isinstance(body.get("tools"), list):
            tools = dict(_tool_summary(t) for t in body["tools"] if isinstance(t, dict))
            b["tool_names"] = list(tools)
            b["tools"] = tools
        if isinstance(body.get("messages"), list):
            b["messages"] = [
                f"{m.get('role', '?')}:{json.dumps(_content_shape(m.get('content')))}"
                + (":tool_calls" if m.get("tool_calls") else "")
                if isinstance(m, dict) else "?"
                for m in body["messages"]
            ]
        for key, value in body.items():
            if key not in b and key not in ("messages", "tools", "system", "metadata"):
                b[key] = _shape(value)
        out["body"] = b
    elif req.body_text is not None:
        out["body"] = "text"
    if responses and ex.response is not None:
        out["response"] = {"status": ex.response.status,
                           "content-type": ex.response.headers.get("content-type", "")}
    return out


def _looks_pseudonymous(value: str) -> bool:
    return value.startswith(("00000000-0000-4000-8000-", "ses_0")) or value.startswith("session-")


def exchange_labels(capture: Capture) -> list[tuple[str, Exchange]]:
    """Each exchange with a label stable across runs: kind plus occurrence number."""
    seen: dict[str, int] = {}
    out = []
    for ex in capture.exchanges:
        body = ex.request.body
        tools = isinstance(body, dict) and bool(body.get("tools"))
        kind = f"{ex.request.method} {ex.request.path}" + ("" if tools or not isinstance(body, dict) else " (no tools)")
        seen[kind] = seen.get(kind, 0) + 1
        out.append((f"{kind}#{seen[kind]}", ex))
    return out


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value


def _flat_capture(capture: Capture, responses: bool) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for label, ex in exchange_labels(capture):
        _flatten(summarize_exchange(ex, responses=responses), label, flat)
    return flat


def _index(captures: list[Capture]) -> dict[str, Capture]:
    out: dict[str, Capture] = {}
    for cap in sorted(captures, key=lambda c: (c.client, c.case, _version_key(c.client_version))):
        out[f"{cap.client}/{cap.case}"] = cap  # the newest version of a case wins
    return out


def _version_key(version: str) -> list[Any]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in version.replace("-", ".").split(".")]


def diff_corpora(old: list[Capture], new: list[Capture], *, responses: bool = False) -> list[Change]:
    """Every structural difference between two corpora, ordered by capture and place."""
    a, b = _index(old), _index(new)
    changes: list[Change] = []
    for key in sorted(set(a) | set(b)):
        if key not in b:
            changes.append(Change(key, "(capture)", a[key].id, None, "removed"))
            continue
        if key not in a:
            changes.append(Change(key, "(capture)", None, b[key].id, "added"))
            continue
        fa, fb = _flat_capture(a[key], responses), _flat_capture(b[key], responses)
        for where in sorted(set(fa) | set(fb), key=lambda w: (w.split(" ", 2)[:2], w)):
            if where not in fb:
                changes.append(Change(key, where, fa[where], None, "removed"))
            elif where not in fa:
                changes.append(Change(key, where, None, fb[where], "added"))
            elif fa[where] != fb[where]:
                changes.append(Change(key, where, fa[where], fb[where], "changed"))
    return changes


def diff_paths(old: Path | str, new: Path | str, *, responses: bool = False) -> list[Change]:
    for p in (old, new):
        if not Path(p).exists():
            raise FileNotFoundError(f"{p}: no such capture file or folder")
    return diff_corpora(load_captures(old), load_captures(new), responses=responses)


def format_diff(changes: list[Change], old: Any = "OLD", new: Any = "NEW") -> str:
    if not changes:
        return f"no structural difference between {old} and {new}"
    lines = [f"structural differences {old} -> {new} ({len(changes)}):"]
    current = None
    for ch in changes:
        if ch.capture != current:
            current = ch.capture
            lines.append(current)
        lines.append(ch.render())
    return "\n".join(lines)
