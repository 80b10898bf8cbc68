"""Replay every captured request against the target and judge what comes back.

Each test is parametrized over the captures (test id = client/case, see suite/cases.py):
- test_replay: every model request of the capture, byte-exact by default, judged with
  check_exchange (accepted, stream grammar to the last event, tools structured and valid,
  model identity, deadlines);
- test_stream_incremental: content events of the replayed streams arrive spread over time;
- test_quoted_variant: the prompt wrapped in literal double quotes (as opencode sends it) gets
  the same verdict and the same answering model;
- test_count_tokens: count_tokens answers for the request (Claude Code captures: it calls it);
- test_stop_sequence: a stop sequence taken from the target's own answer ends generation with
  stop_reason stop_sequence and the matched string.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from conformance.checks import identity
from conformance.checks import suite as suite_checks
from conformance.checks.exchange import check_exchange
from conformance.clients.profile import profile
from conformance.core.registry import violation
from conformance.layers.attribution import attribute
from conformance.net.client import serialize
from conformance.suite import cases
from conformance.suite.cases import NoCaptures, capture_wire, prepared, replay, require_wire, send_step
from conformance.suite.replay import check
from conformance.wire.dialect import Dialect


def pytest_generate_tests(metafunc):
    if "capture" not in metafunc.fixturenames:
        return
    name = metafunc.function.__name__
    if name == "test_count_tokens":
        cases.parametrize(metafunc, _calls_count_tokens)
    elif name == "test_quoted_variant":
        cases.parametrize(metafunc, lambda c: capture_wire(c) is not None)
    elif name == "test_stop_sequence":  # a wire without stop sequences (Responses) has nothing to test
        cases.parametrize(metafunc, lambda c: (w := capture_wire(c)) is not None and w.stop_sequences_key is not None)
    else:
        cases.parametrize(metafunc)


def _calls_count_tokens(capture) -> bool:
    """The capture's wire has a count_tokens endpoint and its client calls it: a client whose own
    wire that is (Claude Code counts tokens before its turns; opencode on the same wire does not)."""
    wire, client = capture_wire(capture), profile(capture.client)
    return wire is not None and wire.count_tokens_path is not None and client.wires[:1] == (wire,)


def _start(ctx, capture) -> Dialect:
    """The capture's wire, once the target is known to serve it."""
    if isinstance(capture, NoCaptures):
        cases.fail_no_captures(ctx, capture)
    ctx.for_capture(capture)
    wire = capture_wire(capture)
    require_wire(ctx, wire)
    return wire


def test_replay(capture, conformance_ctx):
    ctx = conformance_ctx
    _start(ctx, capture)
    replayed = replay(ctx, capture)
    models = [(turn, v.answered_model) for turn, (_, v) in enumerate(replayed, 1) if v.answered_model]
    if len(models) > 1:  # the turns of one captured loop: the same model must answer each
        first = models[0][1]
        odd = [(t, m) for t, m in models if not identity.same_model(m, first)]
        ctx.check(identity.MODEL_STABLE, not odd, "a different model answered a later turn of the same conversation",
                  expected=f"{first} on every turn", seen=", ".join(f"turn {t}: {m}" for t, m in odd),
                  turn=odd[0][0] if odd else None, pass_message=f"{first} on {len(models)} turns")
    failing = sorted({v.check_id for v in ctx.errors})
    ctx.finish(f"{capture.id}: {len(failing)} check(s) failed on the replayed requests: {', '.join(failing)}")


# --------------------------------------------------------------------------- incremental delivery
def _content_times(events, wire: Dialect) -> list[float]:
    return [ev.t for ev in events if getattr(ev, "t", None) is not None and wire.delivers_content(ev)]


# A stream is judged for buffering only when it lasted at least this long (request sent to last
# event). Below it, a whole answer in one burst is what a response cache or a fast engine does
# with a short answer (legal), and a buffer that holds bytes for less than a quarter second hides
# nothing a user would notice; it is also an order of magnitude above the read jitter of a client
# starved of CPU on a loaded machine (tens of ms), so a measured spread means something.
MIN_JUDGED_SECONDS = 0.25
# No single-stream decoder produces content events faster than this (the fastest serve ~2-3k
# tokens/s per stream, and an event carries at least one token): content spread over less than
# events / this rate cannot come from generation, only from releasing held bytes.
FASTEST_EVENTS_PER_S = 5000.0
# On a stream shorter than MIN_JUDGED_SECONDS, content spread over at least this long shows
# streaming (the default reference engine spreads a short answer over ~40 ms).
SHORT_STREAM_SPREAD_SECONDS = 0.02


def judge_incremental(events, wire: Dialect, elapsed: float) -> tuple[str, str]:
    """(outcome, text): content must not all arrive at the end of a stream long enough to tell."""
    times = _content_times(events, wire)
    last = max((getattr(e, "t", None) or 0.0) for e in events) if events else 0.0
    if len(times) < 3:
        return "unverifiable", f"only {len(times)} content event(s): too short to tell"
    spread = last - times[0]
    measured = (f"first content at {times[0] * 1000:.1f} ms, last content at {times[-1] * 1000:.1f} ms, "
                f"stream end at {last * 1000:.1f} ms")
    # A buffered stream releases everything in one write: the first content event arrives
    # within a millisecond of the last event. Anything generated spreads over generation time.
    threshold = max(0.001, min(0.02 * last, len(times) / FASTEST_EVENTS_PER_S))
    # Content that arrived over time shows streaming, however short the stream; on a short one
    # the spread must exceed what one burst read in pieces by a busy client shows (a few ms).
    if spread >= (threshold if last >= MIN_JUDGED_SECONDS else max(threshold, SHORT_STREAM_SPREAD_SECONDS)):
        return "passed", f"content spread over {spread * 1000:.1f} ms ({measured})"
    if last < MIN_JUDGED_SECONDS:  # one burst: buffering shows only on a stream long enough
        return "unverifiable", (f"the stream lasted {last * 1000:.1f} ms ({measured}), its content in one burst: "
                                f"under {MIN_JUDGED_SECONDS * 1000:.0f} ms a stream cannot tell buffering from a "
                                "fast server")
    return "failed", (f"all {len(times)} content events arrived within {spread * 1000:.2f} ms of the end "
                      f"of the stream ({measured})")


def _engine_delivery(ctx, sent, found) -> tuple[str, str] | None:
    """The engine's own delivery of the same request (attribution's replay), judged the same way;
    None without an engine URL or when the engine could not be asked."""
    engine_url = ctx.settings.engine_url
    if not engine_url:
        return None
    seen: list[tuple[str, str]] = []

    def judge_engine(raw, body, api):
        verdict = check_exchange(raw, body, wire=api)
        if verdict.events and not verdict.errors:
            seen.append(judge_incremental(verdict.events, verdict.wire, raw.elapsed))
        return []

    attribute(sent.request, [found], engine_url, wire=sent.wire, client_path=urlsplit(sent.raw.url).path,
              deadlines=ctx.settings.deadlines, extra_judge=judge_engine)
    return seen[0] if seen else None


CONFIRM_BUFFERED = 2


def _resend(ctx, capture, turn: int):
    """Send the turn-th captured request again and judge its delivery; None if it did not stream."""
    step = prepared(ctx, capture.main_exchanges()[turn - 1], turn)
    sent = send_step(ctx, step, note=f"exchange {turn} again (confirming buffered delivery)")
    verdict = check(step, sent.raw)
    if not verdict.events or verdict.errors:
        return None
    return judge_incremental(verdict.events, sent.wire, sent.raw.elapsed)


def test_stream_incremental(capture, conformance_ctx):
    ctx = conformance_ctx
    _start(ctx, capture)
    judged = 0
    for turn, (sent, verdict) in enumerate(replay(ctx, capture, judge=False), 1):
        if not verdict.stream or not verdict.events or verdict.errors:
            continue
        judged += 1
        outcome, text = judge_incremental(verdict.events, sent.wire, sent.raw.elapsed)
        # Arrival times are when this process read the bytes: a client starved of CPU reads a
        # well-paced stream in one go. A buffering router does it every time, so confirm twice.
        for _ in range(CONFIRM_BUFFERED if outcome == "failed" else 0):
            again = _resend(ctx, capture, turn)
            if again is None:
                break
            outcome, text2 = again
            if outcome != "failed":
                text = f"{text2} (a first attempt arrived all at once: {text})"
                break
        if outcome == "failed":
            # Behind a router: an engine that itself answers in one burst makes the router's stream
            # look buffered when the router only added latency before it.
            engine = _engine_delivery(ctx, sent, violation(suite_checks.STREAM_INCREMENTAL, text, turn=turn))
            if engine is not None:
                e_outcome, e_text = engine
                if e_outcome == "unverifiable":
                    outcome, text = "unverifiable", (f"{text}; but the engine's own stream of the same request is "
                                                     f"one burst too ({e_text}): latency added before it, not buffering")
                else:
                    text = f"{text}; the engine's own stream of the same request: {e_outcome}, {e_text}"
        if outcome == "failed":
            ctx.check(suite_checks.STREAM_INCREMENTAL, False, "the stream was delivered all at once at the end",
                      expected="content events spread over the generation time", seen=text, turn=turn)
        else:
            ctx.outcome(suite_checks.STREAM_INCREMENTAL, outcome, message=text, turn=turn)
    if not judged:
        ctx.outcome(suite_checks.STREAM_INCREMENTAL, "unverifiable",
                    message="no complete, valid stream to judge (see test_replay for this capture)")
    ctx.finish(f"{capture.id}: the stream is buffered")


# --------------------------------------------------------------------------- wire variants
def _answer_identity(sent, verdict, headers: tuple[str, ...]) -> dict[str, str]:
    out = {}
    if verdict.answered_model:
        out["model"] = verdict.answered_model
    for name in headers:
        value = sent.raw.response_headers.get(name.lower())
        if value:
            out[name.lower()] = value
    return out


def test_quoted_variant(capture, conformance_ctx):
    ctx = conformance_ctx
    wire = _start(ctx, capture)
    base_sent, base = replay(ctx, capture, judge=False)[0]
    first = capture.main_exchanges()[0]
    variant_body = wire.quoted(prepared(ctx, first).body or {})
    if variant_body is None:
        ctx.outcome(suite_checks.VARIANTS_VERDICT, "unverifiable", message="the request has no user prompt text to quote")
        ctx.finish()
        return
    cases.valid_derived(wire, variant_body, first.request, "the prompt in literal double quotes")
    sent = ctx.send(wire, first.request.path, variant_body, captured_headers=first.request.headers,
                    query=first.request.query, note="prompt wrapped in literal double quotes",
                    body=serialize(variant_body))
    variant = check_exchange(sent.raw, variant_body, wire=wire,
                             expect_model=ctx.settings.served_model(variant_body.get("model")), turn=1)
    # Which model answered is judged by suite.variants.same_model below, not twice.
    a = {c for c in base.failed_checks if not c.startswith("identity.")}
    b = {c for c in variant.failed_checks if not c.startswith("identity.")}
    ctx.check(suite_checks.VARIANTS_VERDICT, a == b, "the quoted prompt got a different verdict from the bare prompt",
              expected=f"failing checks {sorted(a) or 'none'} (bare prompt)",
              seen=f"failing checks {sorted(b) or 'none'} (quoted prompt)",
              pass_message=f"same verdict: {sorted(a) or 'all passed'}")
    ida = _answer_identity(base_sent, base, ctx.settings.model_headers)
    idb = _answer_identity(sent, variant, ctx.settings.model_headers)
    common = sorted(set(ida) & set(idb))
    if not common:
        ctx.outcome(suite_checks.VARIANTS_SAME_MODEL, "unverifiable",
                    message="the target reveals no answering model or tier for one of the variants")
    else:
        differ = [k for k in common if not identity.same_model(idb[k], ida[k])]
        ctx.check(suite_checks.VARIANTS_SAME_MODEL, not differ,
                  "a different model or tier answered the quoted prompt",
                  expected=", ".join(f"{k}={ida[k]}" for k in common),
                  seen=", ".join(f"{k}={idb[k]}" for k in common), pointer="/model",
                  pass_message=", ".join(f"{k}={ida[k]}" for k in common))
    ctx.finish(f"{capture.id}: the quoted wire variant is treated differently")


# --------------------------------------------------------------------------- count_tokens
def test_count_tokens(capture, conformance_ctx):
    ctx = conformance_ctx
    wire = _start(ctx, capture)
    first = capture.main_exchanges()[0]
    body = prepared(ctx, first).body
    if not wire.is_count_tokens(first.request.path):
        body = wire.count_tokens_request(body or {})
    base_path = first.request.path.rstrip("/")
    path = base_path if base_path.endswith("/count_tokens") else base_path + "/count_tokens"
    sent = ctx.send(wire, path, body, captured_headers=first.request.headers, query=first.request.query,
                    note="count_tokens for the captured request")  # the capture's API: the one with count_tokens
    verdict = ctx.judge(sent)
    if suite_checks.COUNT_TOKENS not in verdict.outcomes and not verdict.errors:
        ctx.outcome(suite_checks.COUNT_TOKENS, "passed")
    ctx.finish(f"{capture.id}: count_tokens")


# --------------------------------------------------------------------------- stop sequences
_WORD = re.compile(r"[A-Za-z]{4,}")


def _pick_stop(text: str) -> str | None:
    words = [m for m in _WORD.finditer(text)]
    if len(words) < 3:
        return None
    # A word from the middle: the answer must go on past it, and it must not occur earlier.
    for m in words[len(words) // 2:]:
        if text.find(m.group(0)) == m.start():
            return m.group(0)
    return None


def _reached(text: str, before: str, stop: str) -> bool:
    """Did generation get to `stop`? It is in the text, or the text is the earlier answer cut
    right where `stop` begins (the engine stopped but reported another reason)."""
    if stop in text:
        return True
    head = text.rstrip()
    return bool(head) and before.startswith(head) and before[len(head):].lstrip().startswith(stop)


def test_stop_sequence(capture, conformance_ctx):
    ctx = conformance_ctx
    wire = _start(ctx, capture)
    # The first exchange whose answer has enough text to take a stop sequence from (in a tool
    # loop that is the final answer, not the tool call).
    base = body = first = stop = None
    before = ""
    for (_, verdict), ex in zip(replay(ctx, capture, judge=False), capture.main_exchanges(), strict=True):
        text = wire.text(verdict.message)
        if any(c.startswith("tools.") for c in verdict.failed_checks):
            continue  # a tool call written as text is no answer to take a stop sequence from
        candidate = _pick_stop(text)
        if candidate and isinstance(ex.request.body, dict) and not wire.is_count_tokens(ex.request.path):
            base, first, stop, before = verdict, ex, candidate, text
            body = prepared(ctx, ex).body
            break
    if body is None or stop is None:
        ctx.outcome(suite_checks.STOP_SEQUENCE, "unverifiable",
                    message="the target's answer to this request has too little text to pick a stop sequence from")
        ctx.finish()
        return
    derived = wire.with_stop_sequences(body, [stop])
    cases.valid_derived(wire, derived, first.request, f"stop sequence {stop!r}")
    sent = ctx.send(wire, first.request.path, derived, captured_headers=first.request.headers,
                    query=first.request.query, note=f"stop sequence {stop!r}", body=serialize(derived))
    verdict = check_exchange(sent.raw, derived, wire=wire)
    # Problems the plain replay also has are test_replay's to report; only what the stop sequence
    # changed counts here (a refusal of the field, a stream that breaks only with it).
    known = set(base.failed_checks)
    new = [v for v in verdict.errors if v.check_id not in known]
    if new:
        ctx.outcome(suite_checks.STOP_SEQUENCE, "failed", violations=new,
                    message=f"the request with stop sequence {stop!r} failed: {new[0].message}")
        ctx.finish(f"{capture.id}: stop sequence")
        return
    if verdict.message is None:
        ctx.outcome(suite_checks.STOP_SEQUENCE, "unverifiable",
                    message="no answer to judge (the plain replay fails the same way: see test_replay)")
        ctx.finish()
        return
    msg = verdict.message or {}
    text = wire.text(msg)
    cut_before = before[: before.find(stop)]  # the answer up to where the stop sequence begins
    if wire.matched_stop_key is not None:  # the wire names the stop sequence that matched (Anthropic)
        reason, matched = wire.stop_reason(msg), msg.get(wire.matched_stop_key)
        if reason == "stop_sequence" and matched is None and any("stop_sequence" in c for c in known):
            ctx.outcome(suite_checks.STOP_SEQUENCE, "unverifiable",
                        message="stop_reason is stop_sequence but the stream lacks the stop_sequence field "
                                "(reported by test_replay)")
        elif reason == "stop_sequence":
            ctx.check(suite_checks.STOP_SEQUENCE, matched == stop, "stop_reason is stop_sequence but the matched string is wrong",
                      expected=f"stop_sequence {stop!r}", seen=f"stop_sequence {matched!r}", pointer="/stop_sequence")
        elif _reached(text, before, stop):
            ctx.check(suite_checks.STOP_SEQUENCE, False, "generation reached the stop sequence but it was not reported",
                      expected=f"stop_reason 'stop_sequence' and stop_sequence {stop!r}",
                      seen=f"stop_reason {reason!r}, stop_sequence {matched!r}, text {text[-80:]!r}",
                      pointer="/stop_reason")
        else:
            ctx.outcome(suite_checks.STOP_SEQUENCE, "unverifiable",
                        message=f"the answer took another path and never reached {stop!r} (stop_reason {reason!r})")
    else:  # only the finish reason tells (OpenAI chat: `stop`, as for a natural end)
        reason = wire.stop_reason(msg)
        if stop in text:
            ctx.check(suite_checks.STOP_SEQUENCE, False, "the answer runs past the stop sequence",
                      expected=f"generation stopped before {stop!r}", seen=f"text {text[-80:]!r}", pointer="/content")
        elif reason == wire.stops.natural and cut_before.strip().startswith(text.strip()[:20]):
            ctx.outcome(suite_checks.STOP_SEQUENCE, "passed", message=f"stopped before {stop!r} (finish_reason stop)")
        else:
            ctx.outcome(suite_checks.STOP_SEQUENCE, "unverifiable",
                        message=f"the answer did not reach {stop!r} (finish_reason {reason!r})")
    ctx.finish(f"{capture.id}: stop sequence not honoured")
