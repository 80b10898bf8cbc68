"""A loop's first request: the template found in the corpus (or the bundled fallback) and made
the loop's own: working directory, prompt and model, nothing else."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conformance.capture.corpus import scan
from conformance.capture.format import (
    Capture,
    CapturedRequest,
    CapturedResponse,
    Chunk,
    Exchange,
    save_capture,
)
from conformance.clients import GENERIC, profile
from conformance.core.paths import captured_dir
from conformance.loop.templates import (
    TEMPLATES_DIR,
    Template,
    build_first_request,
    find_stored_history,
    find_template,
)
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

PROMPT = "Read the file numbers.txt and write the sum. [task:sum-numbers]"


def _cwd(template: Template, body: dict) -> str | None:
    return template.profile.cwd_in(template.wire.context_texts(body))


def test_bundled_templates_are_real_first_requests() -> None:
    cc = find_template(ANTHROPIC, Path("/nonexistent"))
    oc = find_template(CHAT, Path("/nonexistent"))
    assert "bundled fallback" in cc.source and "bundled fallback" in oc.source
    assert (cc.client, oc.client) == ("claude-code", "opencode")
    assert cc.request.headers["user-agent"].startswith("claude-cli/")
    assert oc.request.headers["user-agent"].startswith("opencode/")
    assert {"Read", "Write", "Edit", "Bash"} <= set(ANTHROPIC.offered_tools(cc.request.body))
    assert {"read", "write", "edit", "bash", "glob", "grep"} <= set(CHAT.offered_tools(oc.request.body))
    for t in (cc, oc):
        raw = json.dumps(t.request.body)
        assert "sk-test" not in raw and "<redacted>" not in raw


def test_first_request_keeps_claude_codes_structure(tmp_path: Path) -> None:
    t = find_template(ANTHROPIC, Path("/nonexistent"))
    body = build_first_request(t, PROMPT, tmp_path, "my-model")
    orig = t.request.body
    assert body["model"] == "my-model"
    assert list(body) == list(orig)  # key order as the client sends it
    user = body["messages"][0]
    assert user["role"] == "user"
    assert user["content"][0]["text"].startswith("<system-reminder>")  # reminder kept
    assert user["content"][-1]["text"] == PROMPT
    assert user["content"][-1]["cache_control"] == orig["messages"][0]["content"][-1]["cache_control"]
    assert body["messages"][1]["role"] == "system"  # the mid-conversation system entry stays
    assert _cwd(t, body) == str(tmp_path)
    assert "/tmp/project" not in json.dumps(body["system"])
    assert body["tools"] == json.loads(json.dumps(orig["tools"]).replace("/tmp/project", str(tmp_path)))
    assert t.request.body == orig and _cwd(t, orig) == "/tmp/project"  # the template itself is unchanged


def test_first_request_keeps_opencodes_quotes(tmp_path: Path) -> None:
    t = find_template(CHAT, Path("/nonexistent"))
    assert t.request.body["messages"][1]["content"].startswith('"')
    body = build_first_request(t, PROMPT, tmp_path, None)
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1]["content"] == f'"{PROMPT}"'
    assert body["model"] == t.request.body["model"]
    assert _cwd(t, body) == str(tmp_path)


def test_the_responses_wire_runs_as_codex_from_its_bundled_first_request(tmp_path: Path) -> None:
    t = find_template(RESPONSES, "/nonexistent")
    assert t.client == "codex" and t.request.path == "/v1/responses"
    body = t.request.body
    assert body["store"] is False and body["stream"] is True and body["include"] == ["reasoning.encrypted_content"]
    tools = {x.get("name") or x["type"]: x["type"] for x in body["tools"]}
    assert tools["exec_command"] == "function" and tools["apply_patch"] == "custom" and "web_search" in tools
    built = build_first_request(t, "Make the change. [task:x]", tmp_path, "my-model")
    assert _cwd(t, built) == str(tmp_path)
    assert str(tmp_path) in json.dumps(built) and "/home/user/project" not in json.dumps(built)
    users = [i for i in built["input"] if i.get("role") == "user"]
    assert users[-1]["content"][-1]["text"] == "Make the change. [task:x]"
    assert users[0]["content"][0]["text"].startswith("<environment_context>")  # Codex's own block stays
    assert [i["role"] for i in built["input"]] == [i["role"] for i in body["input"]]
    assert built["model"] == "my-model" and built["tools"] == body["tools"]


def test_template_comes_from_the_capture_corpus_when_present(tmp_path: Path) -> None:
    _, src = next(scan(TEMPLATES_DIR / "claude-code.json"))
    body = copy.deepcopy(src.exchanges[0].request.body)
    body["messages"][0]["content"][-1]["text"] = "corpus prompt"
    older = Capture("claude-code", "2.1.90", "default", [Exchange(CapturedRequest("POST", "/v1/messages", "", {}, body))])
    newer = Capture("claude-code", "2.1.197", "default", [Exchange(CapturedRequest("POST", "/v1/messages", "beta=true", {}, body))])
    other = Capture("claude-code", "2.1.197", "effort-xhigh", [Exchange(CapturedRequest("POST", "/v1/messages", "", {}, body))])
    save_capture(older, tmp_path / "claude-code" / "2.1.90" / "default.json")
    save_capture(newer, tmp_path / "claude-code" / "2.1.197" / "default.json")
    save_capture(other, tmp_path / "claude-code" / "2.1.197" / "effort-xhigh.json")
    (tmp_path / "claude-code" / "notes.json").write_text("{\"not\": \"a capture\"}")  # skipped, not an error
    t = find_template(ANTHROPIC, tmp_path)
    assert t.source.startswith("claude-code/2.1.197/default")
    assert t.request.query == "beta=true"
    # an opencode capture is not taken for the Anthropic dialect, and vice versa
    assert "bundled" in find_template(CHAT, tmp_path).source


def test_the_bundled_corpus_provides_every_template() -> None:
    for wire, client in ((ANTHROPIC, "claude-code"), (CHAT, "opencode"), (RESPONSES, "codex")):
        t = find_template(wire, captured_dir())
        assert t.source.startswith(f"{client}/") and "bundled" not in t.source, t.source
        assert t.request.api == wire.name and t.wire is wire
    # Codex's template offers its loop tools (apply_patch only comes with a catalog entry)
    codex = find_template(RESPONSES, captured_dir())
    assert set(profile("codex").loop_tools) <= set(RESPONSES.offered_tools(codex.request.body))


def test_a_stored_session_is_found_for_the_client_that_resumes() -> None:
    history, source = find_stored_history(RESPONSES, captured_dir())
    assert source.startswith("codex/")
    assert any(i.get("type") == "reasoning" and i.get("encrypted_content") for i in history)
    assert history[0].get("role") == "user"


def test_a_template_of_an_unknown_client_names_the_generic_profile(tmp_path: Path) -> None:
    body = {"model": "m", "system": "You are Acme. Working directory: /srv/acme", "max_tokens": 100,
            "messages": [{"role": "user", "content": "say hi"}], "tools": [{"name": "read_file", "input_schema": {}}]}
    t = Template(CapturedRequest("POST", "/v1/messages", "", {"user-agent": "acme/1.0"}, body), "acme", "acme")
    assert t.profile is GENERIC and t.wire is ANTHROPIC
    built = build_first_request(t, PROMPT, tmp_path, None)
    assert built["system"] == f"You are Acme. Working directory: {tmp_path}"
    assert built["messages"] == [{"role": "user", "content": PROMPT}]


def test_a_corpus_without_the_clients_loop_tools_falls_back_to_the_bundled_template(tmp_path: Path) -> None:
    """Codex's plain capture offers no apply_patch: its loops would have no edit tool."""
    _, plain = next(scan(captured_dir() / "codex" / "0.171.0" / "plain.json"))
    save_capture(plain, tmp_path / "plain.json")
    t = find_template(RESPONSES, tmp_path)
    assert "bundled fallback" in t.source and "apply_patch" in t.source, t.source
    assert set(profile("codex").loop_tools) <= set(RESPONSES.offered_tools(t.request.body))
    with_tools = find_template(RESPONSES, captured_dir() / "codex" / "0.171.0" / "apply-patch-loop.json")
    assert with_tools.source.startswith("codex/0.171.0/apply-patch-loop"), with_tools.source


def test_a_request_refused_at_capture_time_is_never_a_template(tmp_path: Path) -> None:
    _, src = next(scan(TEMPLATES_DIR / "claude-code.json"))
    refused = Exchange(copy.deepcopy(src.exchanges[0].request),
                       CapturedResponse(400, {}, [Chunk(0.0, b'{"type":"error","error":{"type":"invalid_request_error",'
                                                           b'"message":"max_tokens"}}')]))
    save_capture(Capture("claude-code", "9.9.9", "default", [refused]), tmp_path / "refused.json")
    assert "bundled fallback" in find_template(ANTHROPIC, tmp_path).source
    answered = Exchange(copy.deepcopy(src.exchanges[0].request), CapturedResponse(200, {}, []))
    save_capture(Capture("claude-code", "9.9.9", "default", [answered]), tmp_path / "refused.json")
    assert find_template(ANTHROPIC, tmp_path).source.startswith("claude-code/9.9.9/default")
