"""Redaction (of captures and of the report copies of sent requests) and the vendor-prose filler,
as pure functions."""

from __future__ import annotations

import json

from conformance.capture.redact import RedactionConfig, Redactor, fill_prose, fill_text, redact_credentials


def compact(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def test_secret_headers_keep_the_scheme_and_drop_the_value():
    r = Redactor()
    out = r.redact_headers({"X-Api-Key": "sk-ant-abc12345678", "Authorization": "Bearer tok_1234567890",
                            "Cookie": "a=b", "X-Custom-Token": "zzz", "anthropic-version": "2023-06-01",
                            "anthropic-dangerous-direct-browser-access": "true"})
    assert out == {"x-api-key": "<redacted:api-key>", "authorization": "Bearer <redacted:token>",
                   "cookie": "<redacted:cookie>", "x-custom-token": "<redacted:secret>",
                   "anthropic-version": "2023-06-01", "anthropic-dangerous-direct-browser-access": "true"}


def test_key_like_strings_anywhere_in_text():
    r = Redactor()
    text = ("use sk-proj-abcdefgh12345 or Bearer eyJabc.defghijkl.mnopqrstu and AKIAABCDEFGHIJKLMNOP "
            "ghp_abcdefghijklmnopqrstuvwxyz; task-notification stays")
    out = r.redact_text(text)
    for secret in ("sk-proj-abcdefgh12345", "eyJabc", "AKIAABCDEFGHIJKLMNOP", "ghp_abcdef"):
        assert secret not in out
    assert "task-notification stays" in out and "Bearer <redacted:token>" in out


def test_metadata_user_id_json_string_is_pseudonymised_in_place():
    r = Redactor()
    sid = "5f0e7a52-1c1b-4c7e-9a55-0d4c2b8e9f11"
    uid = json.dumps({"device_id": "f" * 64, "account_uuid": "", "session_id": sid}, separators=(",", ":"))
    body = r.redact_body({"metadata": {"user_id": uid}, "messages": [{"role": "user", "content": f"id {sid}"}]})
    new = json.loads(body["metadata"]["user_id"])
    assert new == {"device_id": "0" * 63 + "1", "account_uuid": "", "session_id": "00000000-0000-4000-8000-000000000001"}
    assert body["messages"][0]["content"] == "id 00000000-0000-4000-8000-000000000001"  # replaced everywhere
    assert len(body["metadata"]["user_id"]) == len(uid)  # the shape (and size) is kept


def test_legacy_user_id_format():
    r = Redactor()
    uid = "user_" + "a" * 64 + "_account_" + "_session_" + "5f0e7a52-1c1b-4c7e-9a55-0d4c2b8e9f11"
    out = r.redact_body({"metadata": {"user_id": uid}})["metadata"]["user_id"]
    assert out == "user_" + "0" * 63 + "1_account__session_00000000-0000-4000-8000-000000000001"


def test_pseudonyms_are_consistent_and_can_be_turned_off():
    r = Redactor()
    a = r.redact_headers({"x-session-id": "ses_dd655b01bffeBYfRHv8L6KaVNy"})
    b = r.redact_headers({"x-session-affinity": "ses_dd655b01bffeBYfRHv8L6KaVNy", "x-session-id": "ses_other0000000000000000001"})
    assert a["x-session-id"] == b["x-session-affinity"] != b["x-session-id"]
    off = Redactor(RedactionConfig(pseudonymize=False)).redact_headers({"x-claude-code-session-id": "abc-123-def"})
    assert off == {"x-claude-code-session-id": "<redacted:session>"}


def test_configurable_extra_secret_and_kept_header():
    r = Redactor(RedactionConfig(extra_secrets=("hunter2-password",), keep_headers=("x-session-id",)))
    assert r.redact_text("pw hunter2-password!") == "pw <redacted:secret>!"
    assert r.redact_headers({"x-session-id": "keep-me"}) == {"x-session-id": "keep-me"}


def test_filler_keeps_byte_length_tags_and_working_directory():
    text = ("<system-reminder>\nYou are Claude — café ✓.\n - Primary working directory: /tmp/x/project\n"
            "</system-reminder> do it [task:write-file]")
    out = fill_text(text)
    assert len(out.encode()) == len(text.encode())
    assert out.startswith("<system-reminder>\n") and "</system-reminder>" in out
    assert " - Primary working directory: /tmp/x/project\n" in out and "[task:write-file]" in out
    assert "Claude" not in out and "café" not in out and out.isascii()


def _anthropic_body():
    return {
        "model": "m",
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1.2.3;"},
                   {"type": "text", "text": "You are a helpful agent. Be nice.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>date is today</system-reminder>"},
                                         {"type": "text", "text": "my prompt here"}]},
            {"role": "system", "content": "Agent types: explore, plan."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {"a": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "File created"}]},
        ],
        "tools": [{"name": "Write", "description": "Writes a file to disk.",
                   "input_schema": {"type": "object", "properties": {
                       "file_path": {"type": "string", "description": "Absolute path"},
                       "description": {"type": "string", "enum": ["a b"]}}, "required": ["file_path"],
                       "additionalProperties": False}}],
    }


def test_fill_prose_anthropic_keeps_structure_and_size():
    body = _anthropic_body()
    out = fill_prose(body, keep_texts=("my prompt here",))
    assert len(compact(out)) == len(compact(body))
    assert out["system"][0]["text"] == body["system"][0]["text"]  # billing marker kept
    assert out["system"][1]["text"] != body["system"][1]["text"]
    assert out["system"][1]["cache_control"] == {"type": "ephemeral"}
    user = out["messages"][0]["content"]
    assert user[0]["text"].startswith("<system-reminder>") and "date" not in user[0]["text"]
    assert user[1]["text"] == "my prompt here"
    assert out["messages"][1]["content"] != body["messages"][1]["content"]
    assert out["messages"][2:] == body["messages"][2:]  # assistant turn and tool results untouched
    tool = out["tools"][0]
    assert tool["name"] == "Write" and tool["description"] != "Writes a file to disk."
    props = tool["input_schema"]["properties"]
    assert props["file_path"]["description"] != "Absolute path" and props["file_path"]["type"] == "string"
    assert props["description"] == {"type": "string", "enum": ["a b"]}  # a property named description
    assert tool["input_schema"]["required"] == ["file_path"]
    assert body["system"][1]["text"] == "You are a helpful agent. Be nice."  # input not mutated


def test_fill_prose_openai_and_quoted_prompt():
    body = {"model": "m", "messages": [
        {"role": "system", "content": "You are opencode."},
        {"role": "user", "content": "Generate a title for this conversation:\n"},
        {"role": "user", "content": '"reply with \\"ok\\" now"'},
        {"role": "tool", "tool_call_id": "c1", "content": "Wrote file successfully."}],
        "tools": [{"type": "function", "function": {"name": "write", "description": "Write a file",
                                                    "parameters": {"type": "object", "properties": {}}}}]}
    out = fill_prose(body, keep_texts=('reply with "ok" now',))
    assert len(compact(out)) == len(compact(body))
    assert out["messages"][0]["content"] != "You are opencode."
    assert out["messages"][1]["content"] != body["messages"][1]["content"]
    assert out["messages"][2] == body["messages"][2]  # opencode's quoting of the user's prompt is kept
    assert out["messages"][3] == body["messages"][3]
    assert out["tools"][0]["function"]["name"] == "write"
    assert out["tools"][0]["function"]["description"] != "Write a file"


def test_logged_in_account_uuid_is_pseudonymised_too():
    r = Redactor()
    acct = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    uid = json.dumps({"device_id": "e" * 64, "account_uuid": acct, "session_id": "5f0e7a52-1c1b-4c7e-9a55-0d4c2b8e9f11"})
    out = r.redact_body({"metadata": {"user_id": uid}})["metadata"]["user_id"]
    assert acct not in out and json.loads(out)["account_uuid"].startswith("00000000-0000-4000-8000-")


def test_report_copies_replace_credentials_and_keep_everything_else():
    sent = {"x-api-key": "sk-ant-real-key-1234567", "Authorization": "Bearer sk-real-token-987654",
            "api-key": "azure-real", "anthropic-beta": "a,b", "x-session-id": "ses_kept", "User-Agent": "claude-cli"}
    assert redact_credentials(sent) == {
        "x-api-key": "<redacted:api-key>", "Authorization": "<redacted:bearer>", "api-key": "<redacted:api-key>",
        "anthropic-beta": "a,b", "x-session-id": "ses_kept", "User-Agent": "claude-cli"}
    assert list(redact_credentials(sent)) == list(sent)  # names keep their case and order
