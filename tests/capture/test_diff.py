"""`conformance capture --diff`: structural changes are reported, per-run values are not."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

from conformance.capture.diff import diff_corpora, diff_paths
from conformance.capture.format import load_capture, save_capture
from conformance.cli import main
from conformance.core.paths import captured_dir

CC = "claude-code/2.1.197"


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(captured_dir(), dst)
    return dst


def test_identical_corpora_have_no_difference(tmp_path):
    assert diff_paths(captured_dir(), captured_dir()) == []


def test_per_run_values_are_not_structural(tmp_path):
    new = _copy(tmp_path, "new")
    p = new / CC / "tool-loop.json"
    cap = load_capture(p)
    for ex in cap.main_exchanges():
        ex.request.headers["content-length"] = "1"
        ex.request.headers["x-claude-code-session-id"] = "00000000-0000-4000-8000-000000000009"
        if isinstance(ex.request.body, dict):
            ex.request.body["system"][2]["text"] = "different prose entirely"
            for m in ex.request.body["messages"]:
                for part in m["content"] if isinstance(m["content"], list) else []:
                    if part.get("type") == "tool_use":
                        part["id"] = "toolu_other"
    cap.exchanges[0], cap.exchanges[1] = cap.exchanges[1], cap.exchanges[0]  # HEAD raced the request
    save_capture(cap, p)
    assert diff_paths(captured_dir(), new) == []


def test_structural_changes_are_reported_with_their_place(tmp_path):
    old = load_capture(captured_dir() / CC / "default.json")
    new = copy.deepcopy(old)
    new.client_version = "2.2.0"
    req = new.main_exchanges()[0].request
    req.body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    req.body["output_config"]["effort"] = "medium"
    req.headers["anthropic-beta"] += ",new-beta-2027-01-01"
    req.body["tools"] = [t for t in req.body["tools"] if t["name"] != "Bash"]
    write = next(t for t in req.body["tools"] if t["name"] == "Write")
    write["input_schema"]["properties"]["mode"] = {"type": "string"}
    req.body["messages"] = [m for m in req.body["messages"] if m["role"] != "system"]
    req.body["temperature"] = 1
    changes = diff_corpora([old], [new])
    where = {c.where for c in changes}
    label = "POST /v1/messages#1"
    assert f"{label}.body.thinking.type" in where
    assert f"{label}.body.output_config.effort" in where
    assert f"{label}.request.headers.anthropic-beta" in where
    assert f"{label}.body.tools.Bash.keys" in where  # removed tool
    assert f"{label}.body.tool_names" in where
    assert f"{label}.body.tools.Write.schema.properties.mode.type" in where
    assert f"{label}.body.messages" in where
    assert f"{label}.body.temperature" in where and f"{label}.body.keys" in where
    assert all(c.capture == "claude-code/default" for c in changes)  # paired across versions


def test_cli_exit_codes(tmp_path, capsys):
    new = _copy(tmp_path, "new")
    assert main(["capture", "--diff", str(captured_dir()), str(new)]) == 0
    p = new / "opencode/1.18.33/openai-plain.json"
    cap = load_capture(p)
    cap.main_exchanges()[1].request.body["stream_options"] = {"include_usage": False}
    save_capture(cap, p)
    (new / CC / "bare.json").unlink()
    assert main(["capture", "--diff", str(captured_dir()), str(new), "--full"]) == 1
    out = capsys.readouterr().out
    assert "opencode/1.18.33/openai-plain" in out and "stream_options.include_usage: true -> false" in out
    assert "- (capture)" in out and "claude-code/2.1.197/bare" in out
    assert main(["capture", "--diff", str(tmp_path / "nope"), str(new)]) == 2


OLD_CC, NEW_CC = captured_dir() / "claude-code" / "2.1.197", captured_dir() / "claude-code" / "2.1.332"


def test_drift_summary_of_the_two_claude_code_releases(snapshot):
    """2.1.197 -> 2.1.332: within 40 lines of 100 columns, ranked, every difference the issue
    measured by hand (thinking.display, max_tokens, model, effort, the deferred tool beside
    ToolSearch, betas in and out, the empty system entry of --bare, Read / Bash parameters, the
    per-conversation billing header, HEAD / grouped)."""
    from conformance.capture.corpus import load_captures
    from conformance.capture.diff import SUMMARY_COLUMNS, SUMMARY_LINES, drift_summary

    text = drift_summary(load_captures(OLD_CC), load_captures(NEW_CC))
    lines = text.splitlines()
    assert len(lines) <= SUMMARY_LINES and max(map(len, lines)) <= SUMMARY_COLUMNS
    flat = " ".join(line.strip() for line in lines)
    for fact in ("thinking.display", '{"display": "omitted", "type": "adaptive"}', "64000 -> 128000",
                 '"claude-opus-5-5"', '"high" -> "medium"', "defer_loading (DeferredToolPlaceholder)", "ToolSearch",
                 "advanced-tool-use-2025-11-20", "per-turn-control-2026-07-01",
                 "mid-conversation-tool-changes-2026-07-01", "context-1m-2025-08-07",
                 "prompt-caching-scope-2026-01-05", "mid-conversation-system-2026-04-07",
                 "{role: system} after user with content [] (bare)", "Read +allow_large",
                 "Bash -run_in_background", "x-anthropic-billing-header", "2.1.332: 3fc, 8ef, 934",
                 "probe HEAD /: sent by 10 of 10 captures -> 0 of 10", "2862 structural difference(s)"):
        assert fact in flat, fact
    risks = [line.split()[0] for line in lines[2:-1] if line[:1].isupper() and not line.startswith(" ")]
    assert risks == sorted(risks, key=["HIGH", "MEDIUM", "LOW"].index)
    assert flat.count("HEAD /") == 1
    assert text == snapshot


def test_cli_prints_the_summary_first_and_the_full_list_only_with_full(capsys):
    assert main(["capture", "--diff", str(OLD_CC), str(NEW_CC)]) == 1
    short = capsys.readouterr().out
    assert len(short.splitlines()) <= 40 and short.startswith("drift claude-code 2.1.197 -> claude-code 2.1.332")
    assert main(["capture", "--diff", str(OLD_CC), str(NEW_CC), "--full"]) == 1
    full = capsys.readouterr().out
    assert full.startswith(short) and len(full.splitlines()) > 2800
