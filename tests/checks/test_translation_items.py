"""The Responses-client translation rules (Codex -> a Responses router -> a Responses engine):
a real loopback pass-through router in front of the real reference engine, forwarding Codex's
captured requests either faithfully or with one field dropped or changed the way real routers
do (LiteLLM 1.108.7 drops `reasoning` when it carries an effort). The hop is read back from the
engine's received log, as the suite does; a faithful router passes, each dropping router fails
the check that owns the field, under that check's id.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx
import pytest
from aiohttp import web

from conformance.checks import translation as translation_checks
from conformance.checks.translation import Hop
from conformance.core.paths import captured_dir
from conformance.core.results import read_results
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.hop import log_total, observe_hop, probe_requests
from conformance.router.translate import anthropic_to_openai
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loopback import serve_app_in_thread  # noqa: E402

CODEX = captured_dir() / "codex" / "0.171.0"


def _requests(case: str) -> list[dict]:
    doc = json.loads((CODEX / f"{case}.json").read_text(encoding="utf-8"))
    return [dict(ex["request"]["body"], model="reference-model") for ex in doc["exchanges"]
            if ex["request"]["path"] == "/v1/responses"]


# apply-patch-loop turn 3: reasoning {effort, summary}, include, store false, a function and a
# custom (grammar) tool, reasoning items with encrypted_content, function and custom calls with
# their outputs; namespace-call turn 1: namespace tools and a hosted web_search tool.
APPLY_PATCH_TURN3 = _requests("apply-patch-loop")[2]
NAMESPACE_TURN1 = _requests("namespace-call")[0]


@pytest.fixture
def engine_url():
    with serve_engine_in_thread() as url:
        yield url


def _router_app(engine_url: str, rewrite: Callable[[dict], dict]) -> web.Application:
    """A Responses pass-through router: POST /v1/responses, body rewritten by `rewrite`, the
    engine's answer streamed back unchanged."""

    async def responses(request: web.Request) -> web.StreamResponse:
        body = rewrite(copy.deepcopy(await request.json()))
        async with aiohttp.ClientSession() as session, session.post(
                f"{engine_url}/v1/responses", json=body,
                headers={"authorization": request.headers.get("authorization", "")}) as upstream:
            out = web.StreamResponse(status=upstream.status, headers={
                "content-type": upstream.headers.get("content-type", "application/json")})
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    app = web.Application()
    app.router.add_post("/v1/responses", responses)
    return app


def _hop(engine_url: str, body: dict, rewrite: Callable[[dict], dict] = lambda b: b):
    with serve_app_in_thread(_router_app(engine_url, rewrite)) as router:
        since = log_total(engine_url)
        resp = httpx.post(f"{router}/v1/responses", json=body, timeout=60,
                          headers={"authorization": "Bearer sk-test"})
        assert resp.status_code == 200, resp.text[:300]
    hop, report = observe_hop(engine_url, body, None, since=since, client_wire=RESPONSES, replay_answer=False)
    assert hop is not None, report.note
    return report


def _errors(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in report.errors:
        out.setdefault(v.check_id, []).append(v.message)
    return out


@pytest.mark.parametrize("body", [APPLY_PATCH_TURN3, NAMESPACE_TURN1], ids=["apply-patch-turn3", "namespace-turn1"])
def test_a_faithful_pass_through_passes_every_rule(engine_url, body):
    report = _hop(engine_url, body)
    assert _errors(report) == {}, report.format()
    assert not [v for v in report.violations if v.severity == "warning"], report.format()
    ran = set(report.by_check)
    assert {translation_checks.MESSAGES, translation_checks.TOOLS, translation_checks.FIELDS} <= ran
    if body is APPLY_PATCH_TURN3:  # it holds calls, outputs and reasoning items: their rules ran
        assert {translation_checks.PAIRING, translation_checks.THINKING} <= ran


def test_a_pass_through_that_writes_null_optional_fields_and_reorders_keys_passes(engine_url):
    def rewrite(body):
        body = dict(reversed(list(body.items())))
        for item in body["input"]:
            if item.get("type") == "reasoning":
                item["content"] = None  # LiteLLM's reasoning items: `content: null` (null = absent)
        return body

    assert _errors(_hop(engine_url, APPLY_PATCH_TURN3, rewrite)) == {}


def test_the_litellm_drop_of_reasoning_with_an_effort_fails_request_fields_preserved(engine_url):
    def litellm(body):  # LiteLLM 1.108.7 /v1/responses, Codex's headers: `reasoning` with an effort is not sent
        if "effort" in (body.get("reasoning") or {}):
            body.pop("reasoning")
        return body

    report = _hop(engine_url, APPLY_PATCH_TURN3, litellm)
    errors = _errors(report)
    assert set(errors) == {translation_checks.FIELDS}, report.format()
    assert "effort \"medium\" reached the engine as nothing" in errors[translation_checks.FIELDS][0]
    assert "summary \"auto\" reached the engine as nothing" in errors[translation_checks.FIELDS][0]
    # summary-only reasoning (the other Codex captures) goes through that router untouched
    summary_only = dict(APPLY_PATCH_TURN3, reasoning={"summary": "auto"})
    assert _errors(_hop(engine_url, summary_only, litellm)) == {}


def _drop_include(body):
    body.pop("include")
    return body


def _drop_namespace_tool(body):
    body["tools"] = [t for t in body["tools"] if t.get("type") != "namespace"]
    return body


def _custom_format_to_text(body):
    for t in body["tools"]:
        if t.get("type") == "custom":
            t["format"] = {"type": "text"}
    return body


def _rename_call_ids(body):
    for item in body["input"]:
        if "call_id" in item:
            item["call_id"] = "call_router_" + item["call_id"][-6:]
    return body


def _drop_encrypted_reasoning(body):
    for item in body["input"]:
        if item.get("type") == "reasoning":
            item.pop("encrypted_content", None)
    return body


def _drop_instructions_like_developer_messages(body):
    body["input"] = [i for i in body["input"] if i.get("role") != "developer"]
    return body


def _loosen_tool_choice(body):
    body["tool_choice"] = "auto"
    return body


@pytest.mark.parametrize("rewrite,body,check,words", [
    (_drop_include, APPLY_PATCH_TURN3, translation_checks.FIELDS, "reasoning.encrypted_content"),
    (_drop_namespace_tool, NAMESPACE_TURN1, translation_checks.TOOLS, "namespace:mcp__files"),
    (_custom_format_to_text, APPLY_PATCH_TURN3, translation_checks.TOOLS, "custom:apply_patch"),
    (_rename_call_ids, APPLY_PATCH_TURN3, translation_checks.PAIRING, "call_id"),
    (_drop_encrypted_reasoning, APPLY_PATCH_TURN3, translation_checks.THINKING, "encrypted_content"),
    (_drop_instructions_like_developer_messages, APPLY_PATCH_TURN3, translation_checks.MESSAGES, "(message)"),
    (_loosen_tool_choice, dict(APPLY_PATCH_TURN3, tool_choice="required"), translation_checks.TOOLS, "tool_choice"),
], ids=["include", "namespace-tool", "custom-format", "call-ids", "encrypted-reasoning", "developer-messages",
        "forced-tool-choice"])
def test_a_router_that_drops_what_codex_depends_on_fails_its_check(engine_url, rewrite, body, check, words):
    report = _hop(engine_url, body, rewrite)
    errors = _errors(report)
    assert set(errors) == {check}, report.format()
    assert any(words in m for m in errors[check]), errors[check]


def test_changes_the_agent_survives_are_warnings_and_unjudged_fields_info():
    client = dict(APPLY_PATCH_TURN3, text={"verbosity": "low"}, max_output_tokens=4000)
    engine = {k: v for k, v in client.items() if k not in ("text", "store", "client_metadata", "prompt_cache_key")}
    engine["max_output_tokens"] = 8000
    client["temperature"], engine["temperature"] = 0, 1
    report = translation_checks.check_hop(Hop(RESPONSES, client, RESPONSES, engine))
    fields = report[translation_checks.FIELDS]
    by_severity = {s: sorted(v.message.split(":")[0] for v in fields if v.severity == s) for s in ("error", "warning", "info")}
    assert by_severity == {"error": [], "warning": ["store", "text"],
                           "info": ["client_metadata dropped", "max_output_tokens", "prompt_cache_key dropped",
                                    "temperature changed"]}, by_severity


def test_a_structured_output_format_lost_and_a_lowered_cap_are_errors():
    fmt = {"type": "json_schema", "name": "out", "strict": True,
           "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}
    client = dict(APPLY_PATCH_TURN3, text={"format": fmt}, max_output_tokens=4000)
    engine = dict(client, text={"format": {"type": "text"}}, max_output_tokens=1000)
    fields = translation_checks.check_hop(Hop(RESPONSES, client, RESPONSES, engine))
    errors = sorted(v.message.split(":")[0] for v in fields[translation_checks.FIELDS] if v.is_error)
    assert errors == ["max_output_tokens", "text"], errors


def test_an_anthropic_hop_records_no_responses_field_rule():
    client = probe_requests("m")["turn2"]
    engine, _ = anthropic_to_openai(client, model="m")
    assert translation_checks.FIELDS not in translation_checks.check_hop(Hop(ANTHROPIC, client, CHAT, engine))


def test_the_suite_reports_the_drop_on_the_codex_captures_through_the_router(engine_url, pytester):
    """The public test module end to end: the Codex corpus through the LiteLLM-shaped router."""
    def litellm(body):
        if "effort" in (body.get("reasoning") or {}):
            body.pop("reasoning")
        return body

    with serve_app_in_thread(_router_app(engine_url, litellm)) as router:
        outcome = pytester.runpytest_inprocess(
            f"--target={router}", f"--conformance-engine-url={engine_url}", "--conformance-api=responses",
            "--conformance-client=codex", "--conformance-model=reference-model", f"--conformance-captures={captured_dir()}",
            "--conformance-report-dir=reports", "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function",
            "-k", "test_translation")
    failed = {r.test_id.split("[", 1)[-1].rstrip("]") for r in read_results(pytester.path / "reports" / "results")
              if r.outcome == "failed" and r.check_id == translation_checks.FIELDS}
    # the two captures whose reasoning carries an effort; the summary-only ones pass
    assert failed == {"codex/apply-patch-loop", "codex/multi-turn-reasoning"}, (failed, outcome.outlines[-5:])
    assert outcome.parseoutcomes().get("passed", 0) >= 4, outcome.outlines[-5:]
