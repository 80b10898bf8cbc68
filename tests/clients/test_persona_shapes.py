"""The persona built from an unknown client's tool shapes (conformance/clients/persona.py): an
editor whose `command` is an enum of modes is not a shell, and Qwen Code's own table names every
file tool its requests offer."""

from __future__ import annotations

from conformance.capture.corpus import scan
from conformance.clients.persona import binding_by_shape, persona_by_shape
from conformance.clients.profiles.qwen_code import QWEN_CODE
from conformance.core.paths import captured_dir
from conformance.wire.registry import dialect_for_path

EDITOR = {"type": "object", "properties": {
    "command": {"type": "string", "enum": ["view", "create", "str_replace"]}, "path": {"type": "string"},
    "file_text": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}}}


def test_an_editor_with_a_mode_enum_is_not_a_shell():
    assert binding_by_shape(EDITOR) is None
    shell = binding_by_shape({"type": "object", "properties": {"commands": {"type": "string"}}})
    assert shell is not None and shell.operation == "shell" and dict(shell.arguments) == {"command": "commands"}
    assert set(persona_by_shape({"editor": EDITOR}).tools) == set()


def test_qwen_codes_table_binds_the_file_tools_of_its_captured_requests():
    offered = set()
    for _, cap in scan(captured_dir() / QWEN_CODE.name):
        for ex in cap.main_exchanges():
            wire = dialect_for_path(ex.request.path)
            offered |= set(wire.offered_tools(ex.request.body)) if isinstance(ex.request.body, dict) else set()
    assert {"read_file", "write_file", "edit", "run_shell_command", "glob", "grep_search"} <= offered
    assert set(QWEN_CODE.persona.tools) <= offered
