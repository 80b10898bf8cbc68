"""Per-API protocol tests derived from the first capture of each API (test id = the API).

- test_error_envelope: a deliberately invalid request (`Dialect.invalid_request`: `messages` a
  string, a Responses `input` a number) must be refused
  with a 4xx in the API's error envelope (the wire core's check_error judges the envelope and
  the status that goes with its type).
- test_nonstream: the captured request with `stream: false` gets a complete response of the
  API's non-stream shape (stop_sequence present and nullable, usage, stop_reason non-null).
"""

from __future__ import annotations

import pytest

from conformance.checks import suite as suite_checks
from conformance.checks.error_answer import check_error_answer
from conformance.core.verdict import outcome_of
from conformance.suite import cases
from conformance.suite.cases import capture_wire, prepared, require_wire


def pytest_generate_tests(metafunc):
    if "api_capture" not in metafunc.fixturenames:
        return
    caps, why = cases.all_cases(metafunc.config)
    firsts = {}
    for c in caps:
        wire = capture_wire(c)
        if wire is not None and wire.name not in firsts:  # one per wire, test id = the wire's name
            firsts[wire.name] = c
    if not firsts:
        metafunc.parametrize("api_capture", [cases.NoCaptures(why or "no capture of a model API")],
                             ids=["no-captures"])
        return
    names = sorted(firsts)
    metafunc.parametrize("api_capture", [firsts[n] for n in names], ids=names)


def _start(ctx, capture):
    """(the capture's first model request, its wire)."""
    if isinstance(capture, cases.NoCaptures):
        cases.fail_no_captures(ctx, capture)
    wire = capture_wire(capture)
    ctx.api = wire.name
    require_wire(ctx, wire, capture)
    return capture.main_exchanges()[0], wire


def test_error_envelope(api_capture, conformance_ctx):
    ctx = conformance_ctx
    first, wire = _start(ctx, api_capture)
    invalid, what = wire.invalid_request(prepared(ctx, first).body or {})
    sent = ctx.send(wire, first.request.path, invalid, captured_headers=first.request.headers,
                    query=first.request.query, note=f"deliberately invalid: {what}", expect_error=True)
    raw = sent.raw
    if raw.status is None:
        ctx.judge(sent)  # transport failure: reported by the exchange judge (reachable / deadline)
    else:
        violations = check_error_answer(raw, wire)
        errors = [v for v in violations if v.is_error]
        for v in violations:
            if v.check_id != suite_checks.ERROR_ENVELOPE:
                ctx.outcome(v.check_id, outcome_of([v]), violations=[v])
        own = [v for v in violations if v.check_id == suite_checks.ERROR_ENVELOPE]
        if errors:
            ctx.outcome(suite_checks.ERROR_ENVELOPE, "failed", violations=own, message=errors[0].message)
        else:
            ctx.outcome(suite_checks.ERROR_ENVELOPE, "passed", message=f"HTTP {raw.status} in the {wire.name} error envelope")
    ctx.finish(f"{wire.name}: error envelope")


def test_nonstream(api_capture, conformance_ctx):
    ctx = conformance_ctx
    first, wire = _start(ctx, api_capture)
    body = prepared(ctx, first).body
    if body is None:
        pytest.skip("the first captured request has no JSON body")
    derived = wire.with_stream(body, False)
    cases.valid_derived(wire, derived, first.request, "stream: false")
    sent = ctx.send(wire, first.request.path, derived, captured_headers=first.request.headers,
                    query=first.request.query, note="the captured request with stream: false")
    ctx.judge(sent, expect_model=ctx.settings.served_model(derived.get("model")))
    ctx.finish(f"{wire.name}: non-stream response")
