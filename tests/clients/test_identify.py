"""Which client sent a request (conformance/clients/identify.py): every request of the bundled
corpus is its recorded client and version; a User-Agent another client also sends loses to the
body's facts, and the note says whose User-Agent it sent; an unknown client is the generic profile."""

from __future__ import annotations

import copy

import pytest

from conformance.capture.corpus import scan
from conformance.clients import GENERIC, profile
from conformance.clients.identify import identify
from conformance.clients.profiles.claude_code import CLAUDE_CODE
from conformance.clients.profiles.codex import CODEX
from conformance.clients.profiles.opencode import OPENCODE
from conformance.clients.profiles.qwen_code import QWEN_CODE
from conformance.core.paths import captured_dir
from conformance.wire import ANTHROPIC, RESPONSES
from conformance.wire.registry import dialect_for_path

CORPUS = list(scan(captured_dir()))
QWEN_UA = {"user-agent": "claude-cli/0.24.4 (external, cli)", "x-app": "cli"}  # Qwen Code, Anthropic mode


def _exchange(client: str, case: str):
    """The first request offering tools of a bundled capture (any release)."""
    cap = next(c for _, c in CORPUS if (c.client, c.case) == (client, case))
    return next(e for e in cap.main_exchanges() if isinstance(e.request.body, dict) and e.request.body.get("tools"))


def _who(headers, body, path="/v1/messages"):
    client, version, note = identify(headers, body, dialect_for_path(path), path)
    return client.name, version, note


@pytest.mark.parametrize("cap", [c for _, c in CORPUS], ids=lambda c: c.id)
def test_every_bundled_request_is_its_recorded_client(cap):
    borrows = bool(profile(cap.client).identity.borrowed_user_agents)
    for ex in cap.main_exchanges():
        client, version, note = _who(ex.request.headers, ex.request.body, ex.request.path)
        assert (client, version) == (cap.client, cap.client_version)
        # a client that sends another's User-Agent (Qwen Code in Anthropic mode) is noted as such
        assert note == "" or (borrows and note.startswith("sent ")), note


@pytest.mark.parametrize("ua,expected", [
    ("claude-cli/2.1.197 (external, sdk-cli)", ("claude-code", "2.1.197")),
    ("opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14", ("opencode", "1.18.33")),
    ("codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)", ("codex", "0.171.0")),
    ("codex_cli_rs/0.171.0 (Mac OS 15.1.0; arm64) iTerm.app/3.5", ("codex", "0.171.0")),
    ("python-httpx/0.28 codex", ("other", "unknown")),
    ("curl/8.0", ("other", "unknown")),
])
def test_client_is_inferred_from_user_agent(ua, expected):
    assert _who({"user-agent": ua}, None, "/") == (*expected, "")


def test_claude_codes_user_agent_with_another_clients_tools_is_that_client():
    """Synthetic: Claude Code's User-Agent and x-app on opencode's real first request."""
    body = _exchange(OPENCODE.name, "anthropic-tool-loop").request.body
    client, version, note = _who({**QWEN_UA, "user-agent": "claude-cli/2.1.332 (external, cli)"}, body)
    assert (client, version) == (OPENCODE.name, "unknown")
    assert note.startswith("sent Claude Code's User-Agent `claude-cli/2.1.332 (external, cli)`")
    codex = _exchange(CODEX.name, "exec-loop").request.body
    assert _who(QWEN_UA, codex, RESPONSES.generation_path)[0] == CODEX.name


def test_qwen_code_borrowing_claude_codes_user_agent_is_itself_with_a_note():
    """Qwen Code's tools (two of them named as opencode names its own) and system prompt under
    Claude Code's headers: Qwen Code, its version from the borrowed User-Agent, and a note."""
    body = copy.deepcopy(_exchange(CLAUDE_CODE.name, "default").request.body)
    names = ["read_file", "write_file", "edit", "glob", "grep_search", "run_shell_command", "list_directory",
             "todo_write"]
    body["tools"] = [{"name": n, "description": "d", "input_schema": {"type": "object"}} for n in names]
    body["system"] = [{"type": "text", "text": "You are Qwen Code, an interactive CLI agent."}]
    client, version, note = _who(QWEN_UA, body)
    assert (client, version) == (QWEN_CODE.name, "0.24.4")
    assert "sent Claude Code's User-Agent `claude-cli/0.24.4 (external, cli)`" in note
    assert "read_file" in note
    # the same body with only its headers, no User-Agent: the body names it, without a note
    assert _who({}, body) == (QWEN_CODE.name, "unknown", "")
    body["system"] = [{"type": "text", "text": "A filler system prompt of the same length."}]
    assert _who(QWEN_UA, body)[:2] == (QWEN_CODE.name, "0.24.4")  # its tool names alone name it


def test_an_unknown_client_borrowing_a_user_agent_is_the_generic_profile():
    body = copy.deepcopy(_exchange(CLAUDE_CODE.name, "default").request.body)
    body["tools"] = [{"name": n, "description": "d", "input_schema": {"type": "object"}}
                     for n in ("read_files", "run_commands", "editor")]
    body["system"] = [{"type": "text", "text": "You are a small agent."}]
    client, version, note = _who(QWEN_UA, body)
    assert (client, version) == (GENERIC.name, "unknown")
    assert "sent Claude Code's User-Agent" in note and "run_commands" in note
    assert _who({}, body) == (GENERIC.name, "unknown", "")


def test_a_system_mark_wins_over_the_user_agent_and_names_the_client_without_one():
    body = _exchange(CLAUDE_CODE.name, "bare").request.body
    client, _, note = _who({"user-agent": "opencode/1.18.33 ai-sdk/x"}, body)
    assert client == CLAUDE_CODE.name and "sent opencode's User-Agent" in note
    assert _who({}, body) == (CLAUDE_CODE.name, "unknown", "")
    assert _who({"x-app": "cli"}, body) == (CLAUDE_CODE.name, "unknown", "")  # a header fact alone


def test_requests_without_body_facts_keep_the_user_agent():
    """count_tokens with one deferred tool, a title request without tools: they say nothing."""
    count = {"model": "m", "messages": [{"role": "user", "content": "x"}],
             "tools": [{"name": "CronCreate", "input_schema": {"type": "object"}}]}
    ua = {"user-agent": "claude-cli/2.1.332 (external, sdk-cli)"}
    assert _who(ua, count, ANTHROPIC.count_tokens_path) == (CLAUDE_CODE.name, "2.1.332", "")
    title = {"model": "m", "system": "Generate a title.", "messages": [{"role": "user", "content": "x"}]}
    assert _who({"user-agent": "opencode/1.18.33"}, title) == (OPENCODE.name, "1.18.33", "")
