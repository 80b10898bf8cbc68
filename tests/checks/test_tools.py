"""The tool-call checks on hand-made answers (no server): calls written as text, arguments
against the offered schema."""

from __future__ import annotations

from conformance.checks.tools import check_arguments, check_call_structured
from conformance.wire import ANTHROPIC, CHAT

ANTHROPIC_TOOLS = [{"name": "Write", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"], "additionalProperties": False}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {
    "type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
    "required": ["filePath", "content"]}}}]


def test_tool_call_written_as_text_is_caught_only_when_tools_were_offered():
    message = {"content": [{"type": "text", "text": '<tool_call>\n{"name": "Write", "arguments": {}}\n</tool_call>'}]}
    assert [v.check_id for v in check_call_structured(message, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC)] == [
        "tools.call_structured"]
    assert check_call_structured(message, {}, ANTHROPIC) == []
    oa = {"content": 'Sure: {"name": "write", "arguments": {"filePath": "a"}}', "tool_calls": []}
    assert check_call_structured(oa, {"tools": OPENAI_TOOLS}, CHAT)
    plain = {"content": "The name of the file is a.txt and the arguments were fine.", "tool_calls": []}
    assert check_call_structured(plain, {"tools": OPENAI_TOOLS}, CHAT) == []


def test_arguments_validated_against_the_offered_schema():
    good = {"content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": "/a", "content": "x"}}]}
    assert check_arguments(good, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC) == ([], [])
    bad = {"content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {"path": "/a", "content": "x"}}]}
    viols, _ = check_arguments(bad, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC)
    assert viols and {v.check_id for v in viols} == {"tools.arguments_schema"}
    unknown = {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "delete_all", "arguments": "{}"}}]}
    viols, _ = check_arguments(unknown, {"tools": OPENAI_TOOLS}, CHAT)
    assert [v.check_id for v in viols] == ["tools.name_offered"]
    broken = {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "write", "arguments": '{"filePath": '}}]}
    viols, _ = check_arguments(broken, {"tools": OPENAI_TOOLS}, CHAT)
    assert [v.check_id for v in viols] == ["tools.arguments_schema"]


def test_json_about_other_names_is_not_a_lost_call():
    text = 'The API returns {"name": "get_weather", "arguments": "{}"} inside "tool_calls": [...].'
    assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, CHAT) == []
    text2 = '[{"type": "function", "function": {"name": "Write", "arguments": {}}}]'
    msg = {"content": [{"type": "text", "text": text2}]}
    assert check_call_structured(msg, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC)


# Gemma 3 270M on llama.cpp echoed its chat template's tool instruction: no call at all.
ECHOED_INSTRUCTION = (
    'You can call these functions:\n{"type": "function", "function": {"name": "write"}}\n</tool_call>\n\n'
    'To call a function, reply with <tool_call></tool_call> tags around one JSON object whose "name" is one of '
    'the functions above and whose "arguments" follow its parameters.')


def test_a_markers_name_without_a_call_is_not_a_call():
    for text in (ECHOED_INSTRUCTION.split("</tool_call>\n\n")[1], "<tool_call></tool_call>",
                 "<tool_call>\n</tool_call>", "[TOOL_CALLS]", "The <tool_call> tag is how this model marks calls.",
                 "<|python_tag|> is a special token, nothing follows it here."):
        assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, CHAT) == [], text
    # an offered tool's name after the marker is a call's body; after its closing tag it is not
    named = {"content": [{"type": "text", "text": "<tool_call> Write file_path=a.txt"}]}
    assert check_call_structured(named, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC)
    closed = {"content": [{"type": "text", "text": "Use <tool_call></tool_call> tags to call Write."}]}
    assert check_call_structured(closed, {"tools": ANTHROPIC_TOOLS}, ANTHROPIC) == []


def test_markers_followed_by_a_call_are_calls():
    for text in ('[TOOL_CALLS][{"name": "write", "arguments": {"filePath": "a", "content": "b"}}]',
                 '<|python_tag|>{"name": "write", "parameters": {"filePath": "a"}}',
                 "<tool_call>\nwrite\nfilePath: a\n</tool_call>",
                 '<|tool_call|>[{"name": "write"}]<|/tool_call|>',
                 "<function=write>\n<parameter=filePath>a</parameter>\n</function>",
                 '<function_calls>\n<invoke name="write">\n</invoke>\n</function_calls>',
                 # the first marker is only named; a later one opens a call
                 'Reply with <tool_call></tool_call> tags. <tool_call>\n{"name": "write", "arguments": {}}\n</tool_call>'):
        [v] = check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, CHAT)
        assert v.check_id == "tools.call_structured", text


def test_a_call_body_is_looked_for_only_up_to_the_markers_closing_tag():
    text = "<tool_call> nothing here </tool_call> and later {braces} and write"
    assert check_call_structured({"content": text, "tool_calls": []}, {"tools": OPENAI_TOOLS}, CHAT) == []

