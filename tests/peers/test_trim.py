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
