"""check_exchange and the client helpers on hand-made exchanges (no server)."""

from __future__ import annotations

import json

from conformance.checks.exchange import check_exchange, named_field
from conformance.checks.identity import judge_model
from conformance.checks.tools import check_arguments, check_call_structured
from conformance.net.client import headers_for, salted, target_url
from conformance.net.transport import RawExchange
from conformance.wire import ANTHROPIC, CHAT

ANTHROPIC_TOOLS = [{"name": "Write", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"], "additionalProperties": False}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {
    "type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
    "required": ["filePath", "content"]}}}]


def raw(status=200, body=b"", *, path="/v1/messages", ctype="application/json", error_kind=None, error=None):
    return RawExchange("POST", f"http://127.0.0.1:1{path}", {}, b"{}", status=status,
                       response_headers={"content-type": ctype}, chunks=[(0.01, body)] if body else [],
                       error_kind=error_kind, error=error)


def test_refusal_names_the_field_and_shows_the_error_text():
    body = json.dumps({"detail": [{"loc": ["body", "context_management"], "msg": "Extra inputs are not permitted",
                                   "type": "extra_forbidden"}]}).encode()
    request = {"model": "m", "messages": [], "context_management": {"edits": []}, "stream": True}
    v = check_exchange(raw(400, body), request, wire="anthropic")
    assert v.failed_checks == ["suite.request.accepted"]
    viol = v.errors[0]
    assert viol.where.pointer == "/context_management"
    assert "Extra inputs are not permitted" in viol.seen and "HTTP 400" in viol.seen


def test_named_field_prefers_sub_keys_and_system_role():
    req = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"},
           "messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "y"}]}
    assert named_field("output_config.effort: 'xhigh' is not one of low, medium, high", req) == "/output_config/effort"
    assert named_field("messages: role 'system' is not allowed here", req) == "/messages/1/role"
    assert named_field("something unrelated went wrong", req) is None


def test_deadlines_and_connect_are_transport_verdicts_only():
    total = check_exchange(raw(200, b"event: ping\ndata: {}\n\n", ctype="text/event-stream", error_kind="deadline_total",
                               error="did not finish"), {"stream": True}, wire="anthropic")
    assert total.failed_checks == ["suite.deadline.total"]
    first = check_exchange(raw(200, error_kind="deadline_first_content", error="pings only"), {"stream": True},
                           wire="anthropic")
    assert first.failed_checks == ["suite.deadline.first_content"]
    down = check_exchange(RawExchange("POST", "http://127.0.0.1:1/v1/messages", {}, b"", error_kind="connect",
                                      error="refused"), {}, wire="anthropic")
    assert down.failed_checks == ["suite.target.reachable"]


def test_count_tokens_missing_and_present():
    missing = check_exchange(raw(404, b'{"error":"not found"}', path="/v1/messages/count_tokens"), {}, wire="anthropic")
    assert missing.failed_checks == ["suite.count_tokens.available"]
    ok = check_exchange(raw(200, b'{"input_tokens": 12}', path="/v1/messages/count_tokens"), {}, wire="anthropic")
    assert ok.ok and ok.outcomes["suite.count_tokens.available"] == "passed"


def test_tool_call_written_as_text_is_caught_only_when_tools_were_offered():
    message = {"content": [{"type": "text", "text": '<tool_call>\n{"name": "Write", "arguments": {}}\n</tool_call>'}]}
    assert [v.check_id for v in check_call_structured(message, {"tools": ANTHROPIC_TOOLS}, "anthropic")] == [
        "tools.call_structured"]
    assert check_call_structured(message, {}, "anthropic") == []
    oa = {"content": 'Sure: {"name": "write", "arguments": {"filePath": "a"}}', "tool_calls": []}
    assert check_call_structured(oa, {"tools": OPENAI_TOOLS}, "openai")
    plain = {"content": "The name of the file is a.txt and the arguments were fine.", "tool_calls": []}
    assert check_call_structured(plain, {"tools": OPENAI_TOOLS}, "openai") == []


def test_arguments_validated_against_the_offered_schema():
    good = {"content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": "/a", "content": "x"}}]}
    assert check_arguments(good, {"tools": ANTHROPIC_TOOLS}, "anthropic") == ([], [])
    bad = {"content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {"path": "/a", "content": "x"}}]}
    viols, _ = check_arguments(bad, {"tools": ANTHROPIC_TOOLS}, "anthropic")
    assert viols and {v.check_id for v in viols} == {"tools.arguments_schema"}
    unknown = {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "delete_all", "arguments": "{}"}}]}
    viols, _ = check_arguments(unknown, {"tools": OPENAI_TOOLS}, "openai")
    assert [v.check_id for v in viols] == ["tools.name_offered"]
    broken = {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "write", "arguments": '{"filePath": '}}]}
    viols, _ = check_arguments(broken, {"tools": OPENAI_TOOLS}, "openai")
    assert [v.check_id for v in viols] == ["tools.arguments_schema"]


def test_model_identity_outcomes():
    assert judge_model("qwen3-8b", "qwen3-8b", None)[0] == "passed"
    assert judge_model("gpt-4o-2024-08-06", "gpt-4o", None)[0] == "passed"
    # a router that only echoes the alias it was sent cannot prove which model answered
    outcome, viol, note = judge_model("claude-sonnet", "claude-sonnet", "qwen3-8b")
    assert outcome == "unverifiable" and viol is None and "echoes" in note
    # LiteLLM answers with the alias it was sent whatever served it: a match proves nothing
    assert judge_model("claude-sonnet", "claude-sonnet", None, echoes_alias=True)[0] == "unverifiable"
    assert judge_model("other", "claude-sonnet", None, echoes_alias=True)[0] == "failed"
    outcome, viol, _ = judge_model("small-model", "big-model", None)
    assert outcome == "failed" and viol.check_id == "identity.model_matches"


def test_headers_sent_the_way_each_client_sends_the_key():
    captured = {"x-api-key": "<redacted:api-key>", "anthropic-beta": "a,b", "content-length": "9",
                "accept-encoding": "gzip, br", "host": "x", "x-app": "cli"}
    h = headers_for(ANTHROPIC, "sk-1", captured)
    assert h["x-api-key"] == "sk-1" and "authorization" not in h
    assert h["anthropic-beta"] == "a,b" and h["x-app"] == "cli" and h["accept-encoding"] == "identity"
    assert "content-length" not in h and "host" not in h
    bearer = headers_for(ANTHROPIC, "sk-1", {"authorization": "<redacted:bearer>"})
    assert bearer["authorization"] == "Bearer sk-1" and "x-api-key" not in bearer
    oa = headers_for(CHAT, "sk-2", {"authorization": "<redacted>", "x-session-id": "ses_1"})
    assert oa["authorization"] == "Bearer sk-2" and oa["x-session-id"] == "ses_1"
    assert "x-api-key" not in headers_for(ANTHROPIC, None, captured)


def test_salt_goes_first_and_quoted_wraps_the_prompt():
    body = {"system": [{"type": "text", "text": "You are Claude Code."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                                      {"type": "text", "text": "say hi"}]}]}
    s = salted(body, ANTHROPIC, "abc123abc123")
    assert s["system"][0]["text"].startswith("[conformance-run abc123abc123] You are Claude Code.")
    assert body["system"][0]["text"] == "You are Claude Code."  # the original is untouched
    q = ANTHROPIC.quoted(body)
    assert q["messages"][0]["content"][1]["text"] == '"say hi"'
    assert q["messages"][0]["content"][0]["text"] == "<system-reminder>x</system-reminder>"
    oa = salted({"messages": [{"role": "user", "content": "hi"}]}, CHAT, "t0")
    assert oa["messages"][0] == {"role": "system", "content": "[conformance-run t0]"}
    assert target_url("http://h:1/v1/", "/v1/messages", "beta=true") == "http://h:1/v1/messages?beta=true"


def test_json_about_other_names_is_not_a_lost_call():
    text = 'The API returns {"name": "get_weather", "arguments": "{}"} inside "tool_calls": [...].'
    assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, "openai") == []
    text2 = '[{"type": "function", "function": {"name": "Write", "arguments": {}}}]'
    msg = {"content": [{"type": "text", "text": text2}]}
    assert check_call_structured(msg, {"tools": ANTHROPIC_TOOLS}, "anthropic")


# Gemma 3 270M on llama.cpp echoed its chat template's tool instruction: no call at all.
ECHOED_INSTRUCTION = (
    'You can call these functions:\n{"type": "function", "function": {"name": "write"}}\n</tool_call>\n\n'
    'To call a function, reply with <tool_call></tool_call> tags around one JSON object whose "name" is one of '
    'the functions above and whose "arguments" follow its parameters.')


def test_a_markers_name_without_a_call_is_not_a_call():
    for text in (ECHOED_INSTRUCTION.split("</tool_call>\n\n")[1], "<tool_call></tool_call>",
                 "<tool_call>\n</tool_call>", "[TOOL_CALLS]", "The <tool_call> tag is how this model marks calls.",
                 "<|python_tag|> is a special token, nothing follows it here."):
        assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, "openai") == [], text
    # an offered tool's name after the marker is a call's body; after its closing tag it is not
    named = {"content": [{"type": "text", "text": "<tool_call> Write file_path=a.txt"}]}
    assert check_call_structured(named, {"tools": ANTHROPIC_TOOLS}, "anthropic")
    closed = {"content": [{"type": "text", "text": "Use <tool_call></tool_call> tags to call Write."}]}
    assert check_call_structured(closed, {"tools": ANTHROPIC_TOOLS}, "anthropic") == []


def test_markers_followed_by_a_call_are_calls():
    for text in ('[TOOL_CALLS][{"name": "write", "arguments": {"filePath": "a", "content": "b"}}]',
                 '<|python_tag|>{"name": "write", "parameters": {"filePath": "a"}}',
                 "<tool_call>\nwrite\nfilePath: a\n</tool_call>",
                 '<|tool_call|>[{"name": "write"}]<|/tool_call|>',
                 "<function=write>\n<parameter=filePath>a</parameter>\n</function>",
                 '<function_calls>\n<invoke name="write">\n</invoke>\n</function_calls>',
                 # the first marker is only named; a later one opens a call
                 'Reply with <tool_call></tool_call> tags. <tool_call>\n{"name": "write", "arguments": {}}\n</tool_call>'):
        [v] = check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, "openai")
        assert v.check_id == "tools.call_structured", text


def test_a_call_body_is_looked_for_only_up_to_the_markers_closing_tag():
    text = "<tool_call> nothing here </tool_call> and later {braces} and write"
    assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, "openai") == []


def test_named_field_ignores_prose_words_not_written_as_fields():
    req = {"model": "gemma3-270m", "max_tokens": 160, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    # LiteLLM wraps every upstream error in "model group ... failed": no field is named there
    litellm = ('litellm.BadRequestError: OpenAIException - {"error":{"code":400,"message":"item[\'content\'] '
               'is not an array"}}\n\nLiteLLM: model group \'gemma3-270m\' failed with the error above.')
    assert named_field(litellm, req) is None
    assert named_field("the stream ended early", req) is None
    assert named_field("1 validation error: body.messages Input should be a valid list", req) == "/messages"
    assert named_field("'model' is a required property", req) == "/model"
    assert named_field("max_tokens: must be at most 8192", req) == "/max_tokens"
