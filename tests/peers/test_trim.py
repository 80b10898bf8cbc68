"""Trimmed captures for the real-model stacks keep the structure the suite tests and shrink the rest."""

from __future__ import annotations

import json

from conformance.core.paths import captured_dir
from conformance.peers import trim
from conformance.peers.trim import REAL_ENGINE_CASES, trim_body, write_trimmed


def test_trim_body_caps_output_drops_thinking_keeps_called_tools():
    body = {
        "model": "m", "max_tokens": 32000, "stream": True,
        "thinking": {"type": "enabled", "budget_tokens": 8000},
        "system": [{"type": "text", "text": "x" * 5000}],
        "tools": [{"name": n, "description": "d" * 500, "input_schema": {"type": "object", "properties": {
            "p": {"type": "string", "description": "q" * 300}}, "required": ["p"]}}
            for n in ("Agent", "Bash", "Glob", "Read", "Write", "WebFetch")],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "y" * 3000}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Glob", "input": {"p": "*"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z" * 3000}]},
        ],
    }
    out = trim_body(body)
    assert out["max_tokens"] == trim.MAX_TOKENS and out["stream"] is True and "thinking" not in out
    names = [t["name"] for t in out["tools"]]
    assert "Glob" in names and len(names) <= trim.MAX_TOOLS  # the tool the history called stays
    assert out["tools"][0]["input_schema"]["required"] == ["p"]
    assert len(json.dumps(out)) < 3000
    blocks = [b["type"] for m in out["messages"] for b in m["content"]]
    assert blocks == ["text", "tool_use", "tool_result"]
    assert body["max_tokens"] == 32000, "the input body must not be changed"


def test_write_trimmed_covers_both_wires(tmp_path):
    out = write_trimmed(captured_dir(), tmp_path)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))
    assert files == sorted(f"{c}.json" for c in REAL_ENGINE_CASES)
    paths = set()
    for f in out.rglob("*.json"):
        for ex in json.loads(f.read_text())["exchanges"]:
            b = ex["request"].get("body")
            if isinstance(b, dict) and "messages" in b:
                paths.add(ex["request"]["path"])
                assert len(json.dumps(b)) < 6000, f"{f}: a trimmed request is still large"
    assert {"/v1/messages", "/v1/chat/completions"} <= paths


def test_trim_body_learns_the_responses_shape():
    from conformance.capture.format import load_capture

    cap = load_capture(captured_dir() / "codex" / "0.171.0" / "apply-patch-loop.json")
    body = cap.main_exchanges()[-1].request.body
    out = trim_body(body)
    assert out["max_output_tokens"] == trim.MAX_TOKENS and out["temperature"] == 0
    assert "reasoning" not in out and "include" not in out
    assert not [i for i in out["input"] if i.get("type") == "reasoning"]
    names = [t.get("name") for t in out["tools"]]
    assert names == ["exec_command", "apply_patch"], names  # the tools the history called
    custom = out["tools"][1]
    assert custom["type"] == "custom" and custom["format"] == next(
        t for t in body["tools"] if t.get("name") == "apply_patch")["format"]  # the grammar stays
    calls = {i["call_id"] for i in out["input"] if i.get("type") in ("function_call", "custom_tool_call")}
    outputs = {i["call_id"] for i in out["input"] if i.get("type", "").endswith("_call_output")}
    assert calls and calls == outputs
    assert len(json.dumps(out)) < len(json.dumps(body)) / 3  # the apply_patch grammar is most of what stays
    assert all(len(p.get("text", "")) <= trim.SYSTEM_CHARS + 4 for i in out["input"] if i.get("type") == "message"
               for p in i["content"])
