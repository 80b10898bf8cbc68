"""Codex in the corpus: the five cases are there with what each must show, no committed capture
holds a Codex identifier, its ids get consistent pseudonyms, and the recapture diff ignores
Codex's per-run values (and nothing structural). Identifying Codex and launching it are the
client profile's: tests/clients/."""

from __future__ import annotations

import copy
import json
import re
import uuid

import pytest

from conformance.capture.diff import diff_corpora
from conformance.capture.format import load_capture
from conformance.capture.redact import RedactionConfig, Redactor
from conformance.clients import recapture_case
from conformance.clients.profiles.codex import CODEX
from conformance.core.paths import captured_dir

FOLDER = captured_dir() / CODEX.name / CODEX.pin
CODEX_ID_KEYS = CODEX.identifiers.fields
CASES = ["plain", "exec-loop", "apply-patch-loop", "multi-turn-reasoning", "namespace-call", "no-web-search"]
PSEUDONYM = re.compile(r"00000000-0000-4000-8000-\d{12}(:\d+)?")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Codex's own ids of input items (`msg_`, `fco_`, `ctco_` + a uuid) name items, not a person, an
# installation or a session.
ITEM_ID = re.compile(r"\b(?:msg|fco|ctco|fc|rs|ctc)_" + UUID.pattern)


def _cap(case):
    return load_capture(FOLDER / f"{case}.json")


def _bodies(case):
    return [e.request.body for e in _cap(case).main_exchanges()]


def test_every_codex_case_is_recorded_from_the_pinned_binary():
    manifest = json.loads((captured_dir() / "manifest.json").read_text())
    sha = manifest["clients"][f"codex@{CODEX.pin}"]["binary_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", sha)
    for case in CASES:
        cap = _cap(case)
        assert (cap.client, cap.client_version, cap.meta["binary_sha256"]) == ("codex", CODEX.pin, sha)
        assert all(e.request.path == "/v1/responses" for e in cap.main_exchanges())
        assert "wire_api = \"responses\"" in cap.meta["codex_config"]


def test_what_each_codex_case_shows():
    (plain,) = _bodies("plain")
    assert plain["stream"] is True and plain["store"] is False
    assert plain["include"] == ["reasoning.encrypted_content"] and plain["reasoning"] == {"summary": "auto"}
    types = {t["type"] for t in plain["tools"]}
    assert {"function", "namespace", "web_search"} <= types
    exec_cmd = next(t for t in plain["tools"] if t.get("name") == "exec_command")
    assert "cmd" in exec_cmd["parameters"]["properties"] and "strict" in exec_cmd
    (no_search,) = _bodies("no-web-search")
    assert "web_search" not in {t["type"] for t in no_search["tools"]}
    loop = _bodies("exec-loop")
    assert len(loop) == 3
    calls = [i for i in loop[-1]["input"] if i.get("type") == "function_call"]
    assert [json.loads(c["arguments"])["cmd"] for c in calls] == ["cat token.txt",
                                                                 f"printf '%s' {recapture_case.WRITE_FILE_TOKEN} > copy.txt"]
    patch = _bodies("apply-patch-loop")
    assert any(t["type"] == "custom" and t["name"] == "apply_patch" for t in patch[0]["tools"])
    (custom,) = [i for i in patch[-1]["input"] if i.get("type") == "custom_tool_call"]
    assert custom["input"].startswith("*** Begin Patch\n") and custom["input"].endswith("*** End Patch\n")
    assert any(i.get("type") == "custom_tool_call_output" for i in patch[-1]["input"])
    multi = _bodies("multi-turn-reasoning")
    sent_back = [i for i in multi[-1]["input"] if i.get("type") == "reasoning"]
    assert len(sent_back) == 2 and all(i["encrypted_content"] for i in sent_back)
    assert any(i.get("type") == "function_call_output" for i in multi[-1]["input"])
    assert all(b["store"] is False for b in multi)
    ns = _bodies("namespace-call")
    assert any(t["type"] == "namespace" and t["name"] == "mcp__files" for t in ns[0]["tools"])
    (call,) = [i for i in ns[1]["input"] if i.get("type") == "function_call"]
    assert (call["name"], call["namespace"]) == ("read_file", "mcp__files")
    (result,) = [i for i in ns[1]["input"] if i.get("type") == "function_call_output"]
    assert result["output"][-1]["text"] == f"code={recapture_case.NAMESPACE_READ_TOKEN}\n"  # the MCP server answered


def test_the_mcp_server_reads_only_inside_its_root(tmp_path):
    from conformance.capture import codex_mcp

    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert codex_mcp.read_file(root, "a.txt") == ("inside\n", False)
    for escape in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        text, is_error = codex_mcp.read_file(root, escape)
        assert is_error and "outside" in text and "outside\n" != text
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "a.txt"}}}
    assert codex_mcp.answer(root, call)["result"] == {"content": [{"type": "text", "text": "inside\n"}],
                                                       "isError": False}
    listed = codex_mcp.answer(root, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
    assert [t["name"] for t in listed] == ["read_file"]
    assert codex_mcp.answer(root, {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert codex_mcp.answer(root, {"jsonrpc": "2.0", "id": 9, "method": "resources/list"})["error"]["code"] == -32601


@pytest.mark.parametrize("case", CASES)
def test_no_codex_identifier_in_a_committed_capture(case):
    cap = _cap(case)
    for ex in cap.main_exchanges():
        h, body = ex.request.headers, ex.request.body
        for name in ("session-id", "thread-id", "x-client-request-id", "x-codex-window-id"):
            assert PSEUDONYM.fullmatch(h[name]), (name, h[name])
        meta = json.loads(h["x-codex-turn-metadata"])
        nested = json.loads(body["client_metadata"]["x-codex-turn-metadata"])
        for ids in (meta, nested, body["client_metadata"]):
            for key in CODEX_ID_KEYS & set(ids):
                assert PSEUDONYM.fullmatch(ids[key]), (key, ids[key])
        assert "installation_id" in meta and "x-codex-installation-id" in body["client_metadata"]
        assert PSEUDONYM.fullmatch(body["prompt_cache_key"])
    text = (FOLDER / f"{case}.json").read_text()
    leftover = {m.group(0) for m in UUID.finditer(ITEM_ID.sub("", text))} - {
        m.group(0)[:36] for m in PSEUDONYM.finditer(text)}
    assert leftover == set(), f"uuids that are neither pseudonyms nor item ids: {sorted(leftover)}"


def _codex_request(installation, session, turn):
    window = f"{session}:0"
    meta = json.dumps({"installation_id": installation, "session_id": session, "thread_id": session,
                       "turn_id": turn, "window_id": window, "window_number": 0, "turn_started_at_unix_ms": 17},
                      separators=(",", ":"))
    headers = {"session-id": session, "thread-id": session, "x-client-request-id": session,
               "x-codex-window-id": window, "x-codex-turn-metadata": meta, "originator": "codex_exec"}
    body = {"model": "m", "prompt_cache_key": session,
            "client_metadata": {"thread_id": session, "x-codex-window-id": window, "x-codex-turn-metadata": meta,
                                "turn_id": turn, "x-codex-installation-id": installation, "session_id": session},
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                     "text": f"my session is {session}"}]}]}
    return headers, body


def test_codex_ids_get_consistent_shape_keeping_pseudonyms():
    installation, session, turn = (str(uuid.uuid4()) for _ in range(3))
    headers, body = _codex_request(installation, session, turn)
    red = Redactor(RedactionConfig())
    red.collect_identifiers(headers, body)
    h, b = red.redact_headers(headers), red.redact_body(body)
    dumped = json.dumps([h, b])
    for real in (installation, session, turn):
        assert real not in dumped
    assert h["session-id"] == h["thread-id"] == b["prompt_cache_key"] == b["client_metadata"]["session_id"]
    assert h["x-codex-window-id"] == h["session-id"] + ":0"  # the window number survives
    meta = json.loads(h["x-codex-turn-metadata"])
    assert list(meta) == list(json.loads(headers["x-codex-turn-metadata"]))  # same keys, same order
    assert meta["installation_id"] == b["client_metadata"]["x-codex-installation-id"] != meta["session_id"]
    assert len(h["x-codex-turn-metadata"]) == len(headers["x-codex-turn-metadata"])  # sizes stay byte-true
    assert b["client_metadata"]["x-codex-turn-metadata"] == h["x-codex-turn-metadata"]
    assert b["input"][0]["content"][0]["text"] == f"my session is {h['session-id']}"
    again = Redactor(RedactionConfig())
    again.collect_identifiers(headers, body)
    assert again.redact_headers(headers) == h  # numbered in order of first sight: a recapture matches


def test_recapture_diff_ignores_codex_per_run_values_but_not_structure():
    old = _cap("exec-loop")
    new = copy.deepcopy(old)
    for ex in new.exchanges:
        h, b = ex.request.headers, ex.request.body
        meta = json.loads(h["x-codex-turn-metadata"])
        meta.update(turn_id=str(uuid.uuid4()), turn_started_at_unix_ms=42)
        h["x-codex-turn-metadata"] = json.dumps(meta, separators=(",", ":"))
        h["x-client-request-id"] = str(uuid.uuid4())
        b["prompt_cache_key"] = str(uuid.uuid4())
        b["client_metadata"] = dict(b["client_metadata"], turn_id=str(uuid.uuid4()))
        for item in b["input"]:
            for part in item.get("content") or []:
                if isinstance(part, dict) and "<current_date>" in part.get("text", ""):
                    part["text"] = re.sub(r"<current_date>[^<]*", "<current_date>1999-01-01", part["text"])
    assert diff_corpora([old], [new]) == []
    new.exchanges[0].request.body["tools"][0]["name"] = "exec_cmd"
    assert diff_corpora([old], [new]) != []
