"""The public translation test module: the router translation diff (marker `translation`;
runs when --conformance-engine-url is given). The rules it records are the `translation.*`
checks of `conformance.checks.translation`; the hop they judge is built by `conformance.layers.hop`.

For each translation probe (conformance.layers.hop.probe_requests: Claude-Code-shaped turn 1,
turn 2 with history, non-stream; the injection probe with --conformance-injection-route) and the
first Anthropic request of each capture and the last Responses (Codex) request (its input holds
the whole history): send it through the target (the router), find what
reached the engine in the engine's received log (`GET /_conformance/received` on the engine URL:
the reference engine has it; put the capture proxy in front of a real engine), get the engine's
answer, and record every `translation.*` check: errors where the agent loses something it needs,
info lines with the exact parameter mappings and what the Anthropic -> OpenAI-chat path lost.
A failing test is attributed (router / engine / both) with both sides' evidence in its folder.
"""

from __future__ import annotations

import pytest

from conformance.checks.translation import INJECTION, judged_ids
from conformance.layers.hop import PROBE_WIRE, log_total, observe_hop, probe_requests
from conformance.suite import cases

pytestmark = pytest.mark.translation

PROBES = ("turn1", "turn2", "turn1-nonstream", "injection")


def _judged_capture(capture) -> bool:
    """A capture whose client wire has translation rules (an Anthropic client's hop; a Responses
    client's, Codex through a Responses router, whose request fields must arrive with the same effect)."""
    wire = cases.capture_wire(capture)  # a capture of no known wire has none
    return wire is not None and bool(judged_ids(wire))


def pytest_generate_tests(metafunc):
    if "translation_case" not in metafunc.fixturenames:
        return
    # The injection probe only exists for routers that claim an injection route (opt-in option).
    probes = [p for p in PROBES if p != "injection" or metafunc.config.getoption("conformance_injection_route", None)]
    params, ids = [(p, None) for p in probes], list(probes)
    caps, _ = cases.all_cases(metafunc.config) if metafunc.config.getoption("conformance_target", None) else ([], "")
    for c in caps:
        if _judged_capture(c):
            params.append(("capture", c))
            ids.append(cases.capture_key(c, caps))  # client/case: the release is a property
    metafunc.parametrize("translation_case", params, ids=ids)


def test_translation(translation_case, conformance_ctx):
    ctx = conformance_ctx
    engine_url = ctx.settings.engine_url
    if not engine_url:
        pytest.skip("translation diff needs the engine behind the router: pass --conformance-engine-url=URL")
    kind, capture = translation_case
    injection = kind == "injection"
    if injection and not ctx.settings.option("injection_route"):
        pytest.skip("the injection-route check is opt-in: pass --conformance-injection-route for a router that claims one")
    wire = cases.capture_wire(capture) if capture is not None else PROBE_WIRE
    ctx.api = wire.name
    cases.require_wire(ctx, wire)
    if capture is not None:
        ctx.for_capture(capture)
        # A capture of translated requests: its first request. A capture of items (Codex, store
        # false): its last, whose input holds every item the earlier turns made (reasoning, calls, outputs).
        mains = capture.main_exchanges()
        chosen = mains[-1] if wire.carries_items else mains[0]
        body = cases.prepared(ctx, chosen).body
        path, query, headers = chosen.request.path, chosen.request.query, chosen.request.headers
    else:
        body = probe_requests(ctx.session.model_for(None, ctx.settings) or "", injection=injection)[kind]
        path, query, headers = PROBE_WIRE.generation_path, "", None
    body = dict(body or {})
    since = log_total(engine_url)
    sent = ctx.send(wire, path, body, captured_headers=headers, query=query, note=f"translation {kind}")
    verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model")))
    judged = judged_ids(wire)
    if since is None:
        for cid in judged:
            ctx.outcome(cid, "unverifiable", message=f"{engine_url} has no /_conformance/received log: put the capture "
                        "proxy (or the reference engine) behind the router to see what reached the engine")
    elif sent.raw.ok:
        hop, report = observe_hop(engine_url, body, verdict.message, client_wire=wire, since=since,
                                  route=sent.raw.response_headers.get("x-router-route"), injection_probe=injection,
                                  deadlines=ctx.settings.deadlines,
                                  # the rules for items judge the request only: no replay
                                  replay_answer=not wire.carries_items)
        details = report.details()
        for cid in judged:
            if cid == INJECTION and not injection:
                continue
            outcome = report.outcome(cid) if hop is not None else "unverifiable"
            why = report.note if hop is None else ("nothing to compare in this exchange" if outcome == "skipped" else "")
            ctx.outcome(cid, outcome, violations=report.by_check.get(cid, []), message=why, details=details)
        ctx.extra["translation"] = report.format()
    ctx.finish(f"translation {kind}" + (f" {capture.id}" if capture is not None else ""))
