"""Structural diff of two capture corpora (`conformance capture --diff OLD NEW`).

Rules:
- Captures are paired by (client, version, case) for a release both corpora hold, else by
  (client, case), the newest release of each side: the point is to see what a new client release
  changed. Exchanges inside a capture are paired by kind (method, path, with or without
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
- The drift summary (`drift_summary`, what `conformance capture --diff` prints first; the full
  list follows with `--full`) fits SUMMARY_LINES lines of SUMMARY_COLUMNS columns. It aggregates
  the model requests (those offering tools) of every paired capture: request fields added or
  removed, changed defaults (model, max_tokens, effort, thinking; the `default` case's value,
  else the most common), betas added / removed, tools added / removed, new tool attributes and
  parameters, new message shapes (role, position, empty content), the per-conversation first
  system block, endpoints and query strings. Each finding carries a risk for routers (high: a
  field a closed request struct refuses, a tool attribute that changes what is callable; medium:
  a default or beta a router maps or forwards; low: the rest) and is ranked by it. Probe requests
  such as `HEAD /` are one line, with the number of captures that send them, never one per case.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.capture.corpus import load_captures
from conformance.capture.format import Capture, Exchange
from conformance.capture.redact import looks_pseudonymous
from conformance.clients.profile import all_identifiers
from conformance.core.versions import version_key

# Request headers compared by name only: their values change per run or are redacted (the
# clients' identifier headers, as their profiles place them: ids, a turn's start time).
_VOLATILE_HEADERS = frozenset({"content-length", "host", "date", "connection", "x-stainless-retry-count",
                               *all_identifiers().headers, *all_identifiers().json_headers})
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
        if name in _VOLATILE_HEADERS or "<redacted" in value or looks_pseudonymous(value):
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
    for cap in sorted(captures, key=lambda c: (c.client, c.case, version_key(c.client_version))):
        out[f"{cap.client}/{cap.case}"] = cap  # the newest version of a case wins
    return out


def diff_corpora(old: list[Capture], new: list[Capture], *, responses: bool = False) -> list[Change]:
    """Every structural difference between two corpora, ordered by capture and place."""
    changes: list[Change] = []
    for key, ca, cb in _pairs(old, new):
        if cb is None:
            changes.append(Change(key, "(capture)", ca.id, None, "removed"))
            continue
        if ca is None:
            changes.append(Change(key, "(capture)", None, cb.id, "added"))
            continue
        fa, fb = _flat_capture(ca, responses), _flat_capture(cb, responses)
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


SUMMARY_LINES = 40
SUMMARY_COLUMNS = 100
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}
_DEFAULT_KEYS = ("model", "max_tokens", "effort", "thinking")
_STANDARD_TOOL_KEYS = {"name", "description", "input_schema", "type", "function"}


def _pairs(old: list[Capture], new: list[Capture]) -> list[tuple[str, Capture | None, Capture | None]]:
    """(label, old capture, new capture): same release when both sides hold it, else newest by case."""
    out = []
    releases_a = {(c.client, c.client_version) for c in old}
    releases_b = {(c.client, c.client_version) for c in new}
    common = releases_a & releases_b
    same_a = {c.id: c for c in old if (c.client, c.client_version) in common}
    same_b = {c.id: c for c in new if (c.client, c.client_version) in common}
    for key in sorted(set(same_a) | set(same_b)):
        out.append((key, same_a.get(key), same_b.get(key)))
    a = _index([c for c in old if (c.client, c.client_version) not in common])
    b = _index([c for c in new if (c.client, c.client_version) not in common])
    for key in sorted(set(a) | set(b)):
        out.append((key, a.get(key), b.get(key)))
    return out


def _model_requests(caps: list[Capture]) -> list[tuple[Capture, dict]]:
    return [(c, e.request.body) for c in caps for e in c.exchanges
            if isinstance(e.request.body, dict) and e.request.body.get("tools") and e.request.method == "POST"]


def _field_paths(body: dict) -> set[str]:
    """Top-level keys and the keys of the settings objects (thinking.display, ...)."""
    out = set()
    for k, v in body.items():
        out.add(k)
        if k in ("thinking", "output_config", "context_management", "metadata", "stream_options") and isinstance(v, dict):
            out |= {f"{k}.{kk}" for kk in v}
    return out


def _default_of(reqs: list[tuple[Capture, dict]], key: str) -> Any:
    def value(body):
        if key == "effort":
            return (body.get("output_config") or {}).get("effort")
        return body.get(key)

    picked = [value(b) for c, b in reqs if c.case == "default"]
    values = picked or [value(b) for _, b in reqs]
    if not values:
        return None
    texts = [json.dumps(v, sort_keys=True) for v in values]
    return json.loads(max(texts, key=texts.count))


def _betas(caps: list[Capture]) -> set[str]:
    out: set[str] = set()
    for c in caps:
        for e in c.exchanges:
            if isinstance(e.request.body, dict) and e.request.body.get("tools"):
                out |= {b.strip() for b in e.request.headers.get("anthropic-beta", "").split(",") if b.strip()}
    return out


def _tools(reqs) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for _, body in reqs:
        for t in body.get("tools") or []:
            if isinstance(t, dict):
                name, summary = _tool_summary(t)
                schema = summary.get("schema") or {}
                props = set((schema.get("properties") or {}) if isinstance(schema, dict) else {})
                entry = out.setdefault(name, {"attrs": set(), "props": set()})
                entry["attrs"] |= {k for k in t if k not in _STANDARD_TOOL_KEYS}
                entry["props"] |= props
    return out


def _parameter_changes(old: list[Capture], new: list[Capture]) -> list[str]:
    """'Read +allow_large', 'Bash -run_in_background (bare)': per paired case, merged over cases."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for _, ca, cb in _pairs(old, new):
        if ca is None or cb is None:
            continue
        ta, tb = _tools(_model_requests([ca])), _tools(_model_requests([cb]))
        for name in set(ta) & set(tb):
            for sign, props in (("+", tb[name]["props"] - ta[name]["props"]), ("-", ta[name]["props"] - tb[name]["props"])):
                for prop in props:
                    seen.setdefault((name, sign, prop), []).append(cb.case)
    cases = len([1 for _, ca, cb in _pairs(old, new) if ca is not None and cb is not None])
    out = []
    for (name, sign, prop), where in sorted(seen.items()):
        scope = "" if len(set(where)) >= cases or len(set(where)) > 2 else f" ({', '.join(sorted(set(where)))})"
        out.append(f"{name} {sign}{prop}{scope}")
    return out


def _message_shapes(reqs) -> dict[str, str]:
    """shape -> where it was seen (first capture), e.g. 'system after user, content []'."""
    out: dict[str, str] = {}
    for cap, body in reqs:
        prev = "start"
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            role, content = m.get("role", "?"), m.get("content")
            empty = " with content []" if content == [] else (" with content \"\"" if content == "" else "")
            shape = f"{{role: {role}}} after {prev}{empty}"
            out.setdefault(shape, cap.case)
            prev = role
    return out


def _first_system_blocks(caps: list[Capture]) -> dict[str, set[str]]:
    """version -> the distinct per-conversation suffixes of a `x-anthropic-billing-header` block."""
    out: dict[str, set[str]] = {}
    for c in caps:
        for e in c.exchanges:
            body = e.request.body
            system = body.get("system") if isinstance(body, dict) else None
            first = system[0].get("text") if isinstance(system, list) and system and isinstance(system[0], dict) else None
            m = re.match(r"x-anthropic-billing-header: cc_version=([\w.]+?)\.([0-9a-f]{3});", first or "")
            if m:
                out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def _endpoints(caps: list[Capture]) -> dict[str, int]:
    """'METHOD path?query' -> the number of captures that send it."""
    out: dict[str, int] = {}
    for c in caps:
        for ep in {f"{e.request.method} {e.request.url_path}" for e in c.exchanges}:
            out[ep] = out.get(ep, 0) + 1
    return out


def _names(items, limit: int = 0) -> str:
    items = sorted(items)
    return ", ".join(items) if items else "none"


def _fit(line: str) -> str:
    return line if len(line) <= SUMMARY_COLUMNS else line[:SUMMARY_COLUMNS - 1] + "…"


def drift_summary(old: list[Capture], new: list[Capture], changes: list[Change] | None = None) -> str:
    """The ranked drift report of OLD -> NEW in at most SUMMARY_LINES lines of SUMMARY_COLUMNS."""
    changes = diff_corpora(old, new) if changes is None else changes
    rel_a = sorted({f"{c.client} {c.client_version}" for c in old})
    rel_b = sorted({f"{c.client} {c.client_version}" for c in new})
    findings: list[tuple[str, str, str]] = []  # (risk, what, risk note)
    ra, rb = _model_requests(old), _model_requests(new)

    fa = set().union(*(_field_paths(b) for _, b in ra)) if ra else set()
    fb = set().union(*(_field_paths(b) for _, b in rb)) if rb else set()
    if fb - fa:
        findings.append(("high", f"request fields added: {_names(fb - fa)}",
                         "a closed request struct (extra fields forbidden) refuses every request"))
    if fa - fb:
        findings.append(("low", f"request fields removed: {_names(fa - fb)}", "a router that required them breaks"))

    ta, tb = _tools(ra), _tools(rb)
    attrs = sorted({f"{a} ({n})" for n, t in tb.items() for a in t["attrs"] - (ta.get(n, {}).get("attrs") or set())})
    if attrs:
        findings.append(("high", f"new tool attributes: {', '.join(attrs)}",
                         "defer_loading: not callable until loaded; never a JSON Schema keyword"))
    if set(tb) - set(ta):
        findings.append(("high", f"tools added: {_names(set(tb) - set(ta))}",
                         "each schema must compile in the engine's decoder when forced"))
    if set(ta) - set(tb):
        findings.append(("medium", f"tools removed: {_names(set(ta) - set(tb))}", "scenarios naming them break"))
    params = _parameter_changes(old, new)
    if params:
        findings.append(("medium", f"tool parameters: {'; '.join(params)}",
                         "a router or template caching tool schemas is stale"))

    for key in _DEFAULT_KEYS:
        va, vb = _default_of(ra, key), _default_of(rb, key)
        if va != vb:
            note = {"max_tokens": "above a small engine's context: clamp or a 4xx naming the limit",
                    "model": "routers map model names: the new default needs a route",
                    "effort": "effort ladders differ per engine (low/medium/high only on some)",
                    "thinking": "a closed thinking struct refuses the new key"}[key]
            findings.append(("medium", f"default {key}: {json.dumps(va)} -> {json.dumps(vb)}", note))

    ba, bb = _betas(old), _betas(new)
    if bb - ba:
        findings.append(("medium", f"betas added: {_names(bb - ba)}", "a beta allow-list refuses them"))
    if ba - bb:
        findings.append(("low", f"betas removed: {_names(ba - bb)}", "features keyed on them go off"))

    sa, sb = _message_shapes(ra), _message_shapes(rb)
    for shape in sorted(set(sb) - set(sa)):
        risk = "high" if "content []" in shape or "system" in shape else "medium"
        findings.append((risk, f"new message shape: {shape} ({sb[shape]})",
                         "validators requiring content or user/assistant roles refuse it"))
    ha, hb = _first_system_blocks(old), _first_system_blocks(new)
    if hb:
        seen = "; ".join(f"{v}: {', '.join(sorted(x))}" for v, x in sorted({**ha, **hb}.items()))
        findings.append(("medium", f"first system block x-anthropic-billing-header cc_version=<v>.<3 hex>, "
                                   f"suffix per conversation ({seen})",
                         "prefix caches hashing from token 0 re-prefill each conversation"))

    ea, eb = _endpoints(old), _endpoints(new)
    probes = {ep for ep in set(ea) | set(eb) if not ep.startswith("POST")}
    for ep in sorted(set(eb) - set(ea) - probes):
        findings.append(("medium", f"new endpoint or query: {ep} ({eb[ep]} captures)", "a router must route it"))
    for ep in sorted(set(ea) - set(eb) - probes):
        findings.append(("low", f"endpoint no longer sent: {ep}", "nothing to route"))
    for ep in sorted(probes):
        if ea.get(ep, 0) != eb.get(ep, 0):
            findings.append(("low", f"probe {ep}: sent by {ea.get(ep, 0)} of {len(old)} captures -> "
                                    f"{eb.get(ep, 0)} of {len(new)}", "health probes only"))

    findings.sort(key=lambda f: RISK_ORDER[f[0]])
    pairs = _pairs(old, new)
    head = [f"drift {', '.join(rel_a)} -> {', '.join(rel_b)}: {len(pairs)} case(s), "
            f"{len(changes)} structural difference(s)",
            "risk   finding  (-> what it means for a router or engine)"]
    budget = SUMMARY_LINES - len(head) - 1
    body: list[str] = []
    for n, (risk, what, note) in enumerate(findings):
        lines = _finding_lines(risk, what, note)
        if len(body) + len(lines) > budget - 1 and n < len(findings) - 1 or len(body) + len(lines) > budget:
            body.append(f"… {len(findings) - n} more finding(s): --full lists every difference")
            break
        body += lines
    tail = [f"{len(changes)} structural difference(s) in {len({c.capture for c in changes})} case(s); "
            "--full lists every one"]
    return "\n".join(_fit(line) for line in head + body + tail)


def _finding_lines(risk: str, what: str, note: str) -> list[str]:
    """The finding wrapped at SUMMARY_COLUMNS (lists are never cut), its note on the same line when
    it fits, else on the next."""
    lines = textwrap.wrap(what, SUMMARY_COLUMNS, initial_indent=f"{risk.upper():<7}", subsequent_indent=" " * 9,
                          break_on_hyphens=False)
    joined = f"{lines[-1]} -> {note}"
    if len(joined) <= SUMMARY_COLUMNS:
        return lines[:-1] + [joined]
    return lines + [f"{'':9}-> {note}"]


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
