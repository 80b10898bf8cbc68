"""Trimmed copies of bundled captures, small enough for a real CPU model (Gemma 3 270M).

Rules:
- The structure the suite tests stays: the same client, endpoint, headers, message roles, block
  types (text, tool_use, tool_result), tool names and input schemas, stream flag. What shrinks is
  prose and size: system text and long message text are cut to a few hundred characters, tool
  and schema descriptions are cut, at most MAX_TOOLS tools are kept (every tool the conversation
  already called is kept), and the output cap becomes MAX_TOKENS.
- temperature 0 (greedy decoding), so a real model's verdicts repeat from run to run and can be
  compared with fixtures.
- Extended thinking is removed: the API requires budget_tokens >= 1024 and below max_tokens, so a
  thinking request cannot be made small, and a 270M base model does not think anyway. On the
  Responses wire that is the `reasoning` option, `include: ["reasoning.encrypted_content"]` and
  the `reasoning` input items (their encrypted_content is another server's).
- Responses requests (Codex): `instructions` and the `input` messages' text parts are cut like
  system and message text, tool outputs like tool results; function_call / custom_tool_call items
  and their outputs keep their call_ids; custom tools keep their grammar and namespace tools
  their inner tools; the output cap is `max_output_tokens` (added when absent).
- Prefill at ~170 tok/s and decode at ~15-30 tok/s on two cores (measured; docs/peers.md):
  a trimmed request takes seconds, a full Claude Code request minutes.
- Trimmed files are written under a cache folder at run time, never committed: they follow the
  corpus as it changes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

MAX_TOKENS = 160  # room for a whole <tool_call>: a cut call is a truncation, not a deviation
MAX_TOOLS = 2
SYSTEM_CHARS = 200
TEXT_CHARS = 200
DESC_CHARS = 60
PREFERRED_TOOLS = ("write", "read", "bash", "read_file", "write_file", "edit", "glob", "grep", "exec_command",
                   "apply_patch")

# Cases of the bundled corpus replayed through real engines (few, each a different shape).
REAL_ENGINE_CASES = (
    "claude-code/2.1.197/tool-loop",     # Claude Code: tool_use/tool_result history (the loop's template)
    "opencode/1.18.33/openai-plain",     # opencode on the OpenAI wire (the loop's OpenAI template)
    "opencode/1.18.33/openai-tool-loop", # opencode, OpenAI tool_calls history
    "codex/0.171.0/apply-patch-loop",    # Codex on the Responses wire: exec_command, the freeform apply_patch
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " ..."


def _trim_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "description" and isinstance(v, str):
                out[k] = _cut(v, DESC_CHARS)
            else:
                out[k] = _trim_schema(v)
        return out
    if isinstance(schema, list):
        return [_trim_schema(v) for v in schema]
    return schema


def _tool_name(tool: dict) -> str:
    return str(tool.get("name") or (tool.get("function") or {}).get("name") or "")


def _called_tools(messages: list) -> set[str]:
    names: set[str] = set()
    for m in messages:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or []:
            names.add(str((call.get("function") or {}).get("name", "")))
        if m.get("type") in ("function_call", "custom_tool_call"):  # Responses input items
            names.add(str(m.get("name", "")))
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    names.add(str(block.get("name", "")))
    return names


def _pick_tools(tools: list, messages: list) -> list:
    called = _called_tools(messages)
    keep = [t for t in tools if _tool_name(t) in called]
    ranked = sorted(
        (t for t in tools if t not in keep),
        key=lambda t: (PREFERRED_TOOLS.index(_tool_name(t).lower()) if _tool_name(t).lower() in PREFERRED_TOOLS
                       else len(PREFERRED_TOOLS)),
    )
    keep += ranked[: max(0, MAX_TOOLS - len(keep))]
    out = []
    for t in keep:
        t = copy.deepcopy(t)
        if "description" in t and isinstance(t["description"], str):
            t["description"] = _cut(t["description"], DESC_CHARS)
        for key in ("input_schema", "parameters"):
            if key in t:
                t[key] = _trim_schema(t[key])
        if isinstance(t.get("function"), dict):
            fn = t["function"]
            if isinstance(fn.get("description"), str):
                fn["description"] = _cut(fn["description"], DESC_CHARS)
            if "parameters" in fn:
                fn["parameters"] = _trim_schema(fn["parameters"])
        out.append(t)
    return out


def _trim_content(content: Any, limit: int) -> Any:
    if isinstance(content, str):
        return _cut(content, limit)
    if isinstance(content, list):
        out = []
        for block in content:
            if not isinstance(block, dict):
                out.append(block)
                continue
            block = dict(block)
            if isinstance(block.get("text"), str):
                block["text"] = _cut(block["text"], limit)
            if block.get("type") == "tool_result" and "content" in block:
                block["content"] = _trim_content(block["content"], limit)
            out.append(block)
        return out
    return content


def trim_body(body: dict) -> dict:
    """A small copy of one request body (Anthropic messages or OpenAI chat completions)."""
    b = copy.deepcopy(body)
    # Greedy decoding: the verdicts of a real model are compared with fixtures run after run.
    b["temperature"] = 0
    b.pop("top_p", None)
    b.pop("top_k", None)
    b.pop("thinking", None)
    b.pop("reasoning_effort", None)
    b.pop("reasoning", None)
    if isinstance(b.get("output_config"), dict):
        b["output_config"].pop("effort", None)
        if not b["output_config"]:
            b.pop("output_config")
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if key in b:
            b[key] = min(int(b[key] or MAX_TOKENS), MAX_TOKENS)
    if "max_tokens" not in b and "max_completion_tokens" not in b and "messages" in b and "system" in b:
        b["max_tokens"] = MAX_TOKENS
    if "system" in b:
        b["system"] = _trim_content(b["system"], SYSTEM_CHARS)
    if isinstance(b.get("input"), list):  # the Responses wire
        _trim_responses(b)
        return b
    messages = b.get("messages") or []
    for m in messages:
        if isinstance(m, dict) and "content" in m:
            limit = SYSTEM_CHARS if m.get("role") in ("system", "developer") else TEXT_CHARS
            m["content"] = _trim_content(m["content"], limit)
    if isinstance(b.get("tools"), list) and b["tools"]:
        b["tools"] = _pick_tools(b["tools"], messages)
    return b


def _trim_responses(b: dict) -> None:
    b.pop("include", None)  # reasoning.encrypted_content: no reasoning is asked for
    b["max_output_tokens"] = min(int(b.get("max_output_tokens") or MAX_TOKENS), MAX_TOKENS)
    if isinstance(b.get("instructions"), str):
        b["instructions"] = _cut(b["instructions"], SYSTEM_CHARS)
    items = [i for i in b["input"] if not (isinstance(i, dict) and i.get("type") == "reasoning")]
    for i in items:
        if not isinstance(i, dict):
            continue
        if i.get("type", "message") == "message" and "content" in i:
            limit = SYSTEM_CHARS if i.get("role") in ("system", "developer") else TEXT_CHARS
            i["content"] = _trim_content(i["content"], limit)
        elif i.get("type") in ("function_call_output", "custom_tool_call_output") and "output" in i:
            i["output"] = _trim_content(i["output"], TEXT_CHARS)
    b["input"] = items
    if isinstance(b.get("tools"), list) and b["tools"]:
        b["tools"] = _pick_tools(b["tools"], items)


def trim_capture_file(src: Path, dst: Path) -> None:
    doc = json.loads(Path(src).read_text(encoding="utf-8"))
    for ex in doc.get("exchanges", []):
        req = ex.get("request") or {}
        if isinstance(req.get("body"), dict):
            req["body"] = trim_body(req["body"])
            # The captured length no longer holds; the suite re-serialises the body anyway.
            for h in list(req.get("headers") or {}):
                if h.lower() == "content-length":
                    req["headers"].pop(h)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def write_trimmed(corpus: Path, out: Path, cases: tuple[str, ...] = REAL_ENGINE_CASES) -> Path:
    """Write trimmed copies of `cases` (ids relative to the corpus, no .json) as the only files
    under `out` (a stale file from an earlier case list would be replayed too)."""
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    for case in cases:
        src = corpus / f"{case}.json"
        if not src.exists():
            raise FileNotFoundError(f"capture {src} not found: the bundled corpus changed; update "
                                    "conformance/peers/trim.py REAL_ENGINE_CASES")
        trim_capture_file(src, tmp / f"{case}.json")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out
