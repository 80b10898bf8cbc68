"""Drive a reference router -> reference engine stack with the translation probes; build the
attribution matrix (fault x verdict).

Used by tests/layers/test_attribution_matrix.py and runnable as a script:
    .venv/bin/python tests/layers/router_stack.py            # prints the matrix

Per stack: the probes of conformance.layers.hop (turn 1 stream, turn 2 with history, turn 1
non-stream, the opt-in injection probe), turn 1 with the tool call forced (`turn1-forced`), the
quoted wire variant of turn 1, and a count_tokens call. Each exchange is judged by check_exchange plus the checks that live outside it here
(stream incrementality, same model across wire variants, the translation.* diff); every failing
exchange is attributed with conformance.layers.attribution.attribute.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__":  # allow running as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.checks import suite as suite_checks
from conformance.checks.exchange import check_exchange
from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.attribution import Attribution, attribute
from conformance.layers.hop import log_total, observe_hop, probe_requests
from conformance.net.transport import Deadlines, RawExchange, send_sync
from conformance.router.launch import serve_router_in_thread
from conformance.wire import ANTHROPIC
from conformance.wire.anthropic import grammar as anthropic_wire
from conformance.wire.dialect import Dialect

MODEL = "reference-model"
HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
# Generous for every row (the machine may be loaded: a slow correct answer must not read as a
# hang); short only for the hang rows, whose exchanges are expected to hit them.
DEADLINES = Deadlines(connect=10, first_content=30, total=60)
HANG_DEADLINES = Deadlines(connect=5, first_content=2.0, total=5)

# Engine faults probed here, and the router mode that lets them through: a translating router
# re-encodes the Anthropic stream, so Anthropic-wire faults of the engine are only visible through
# a pass-through router, and OpenAI-wire faults only through a translating one.
ENGINE_FAULTS_MODE = {
    "stop-sequence-missing": "anthropic",
    "nonstream-stop-sequence-omitted": "anthropic",
    "message-start-incomplete": "anthropic",
    "strict-unknown-field": "anthropic",
    "strict-adaptive-effort": "anthropic",
    "system-role-in-messages": "anthropic",
    "tool-use-start-without-input": "anthropic",
    "block-index-broken": "anthropic",
    "usage-inconsistent": "anthropic",
    "count-tokens-missing": "anthropic",
    "tool-call-as-text": "openai",
    "tool-args-invalid-json": "openai",
    "tool-args-not-string": "openai",
    "tool-stop-reason-wrong": "openai",
    "stream-truncated": "anthropic",  # on OpenAI chat only [DONE] is lost: a tolerant router ends cleanly
    "wrong-model": "openai",
    "buffered-stream": "openai",
    "hang": "openai",
    "hang-with-pings": "openai",
    # both: the translating router must map {type: any} to "required" for the engine to be blamed
    "tool-choice-ignored": ("openai", "anthropic"),
}
# A fault row runs turn1 and turn2 (stream), plus the probe its fault needs; the correct stacks
# run every probe (so "nothing reported" covers all of them).
EXTRA_PROBES = {
    "nonstream-stop-sequence-omitted": ("turn1-nonstream",),
    "stop-sequence-missing": ("turn1-nonstream",),
    "lossy-translation": ("turn1-nonstream",),
    "jailbreak-route-keeps-tools": ("injection",),
    "routing-unstable-across-wire-variants": ("turn1-quoted",),
    "count-tokens-missing": ("count_tokens",),
    "tool-choice-ignored": ("turn1-forced",),
}
# Engine faults that cost a deadline per exchange: probed with one exchange only.
SLOW_ENGINE_FAULTS = {"hang", "hang-with-pings"}
# Router faults and the mode(s) they are shown in (lossy-translation in both: what is lost differs).
ROUTER_FAULTS_MODE = {
    "lossy-translation": ("openai", "anthropic"),
    "strict-unknown-field": "openai",
    "strict-adaptive-effort": "openai",
    "stop-sequence-missing": "openai",
    "routing-unstable-across-wire-variants": "openai",
    "buffered-stream": "openai",
    "wrong-model": "openai",
    "jailbreak-route-keeps-tools": "openai",
}


def forced_variant(turn1: dict) -> dict:
    """Turn 1 with the tool call forced (`tool_choice {type: any}`), as an agent loop forces its
    first step; thinking disabled and no context_management, as Claude Code sends a forced turn
    (the Messages API refuses a forced tool_choice with thinking on)."""
    body = {k: v for k, v in turn1.items() if k not in ("output_config", "context_management")}
    return dict(body, thinking={"type": "disabled"}, tool_choice={"type": "any"})


def incremental(raw: RawExchange, body: dict | None = None, wire: Dialect = ANTHROPIC) -> list[Violation]:
    """suite.stream.incremental, as judged here: in a stream of 4+ events, the bytes must not all
    arrive at once at the end (one network chunk, or a spread under a fifth of the exchange)."""
    if not raw.ok or "text/event-stream" not in raw.content_type or not raw.chunks:
        return []
    events = raw.body().count(b"\n\n")
    if events < 4:
        return []
    first, last = raw.chunks[0][0], raw.chunks[-1][0]
    # The reference engine paces its events over the whole generation, so a real stream spreads
    # over most of the exchange; a buffered one (held back, then released) arrives in its last
    # moments however the router re-writes it. Relative, not absolute: a loaded machine stretches
    # the release of a buffered stream past any fixed number of milliseconds.
    if len(raw.chunks) == 1 or (last - first) < 0.2 * last:
        return [violation(suite_checks.STREAM_INCREMENTAL, f"all {events} events arrived in {len(raw.chunks)} chunk(s) within "
                          f"{last - first:.3f}s at the end of a {last:.3f}s exchange", expected="content spread over the exchange",
                          seen=f"first chunk at {first:.3f}s, last at {last:.3f}s")]
    return []


def engine_incremental(raw: RawExchange, body: dict | None = None, wire: Dialect = ANTHROPIC) -> list[Violation]:
    """`incremental` for attribution's direct replay on the engine, re-checked like the router side:
    a loaded machine can read the engine's paced stream in one go, and a buffered verdict on
    the engine would move a buffering router's fault to the engine. A buffering engine buffers
    every time, so the verdict stands only when the replay, sent again twice, stays buffered."""
    late = incremental(raw, body, wire)
    for _ in range(2):
        if not late:
            break
        again = send_sync("POST", raw.url, headers=dict(raw.request_headers), body=raw.request_body,
                          deadlines=DEADLINES, first_content=wire.content_started)
        late = incremental(again, body, wire)
    return late


@dataclass
class Observation:
    name: str
    status: int | None
    violations: list[Violation] = field(default_factory=list)  # errors only
    attribution: Attribution | None = None
    lost: list[str] = field(default_factory=list)
    mappings: list[str] = field(default_factory=list)

    @property
    def check_ids(self) -> list[str]:
        return sorted({v.check_id for v in self.violations})


def send(url: str, path: str, body: dict, deadlines: Deadlines | None = None) -> RawExchange:
    return send_sync("POST", url + path, headers=HEADERS, body=json.dumps(body).encode(), deadlines=deadlines or DEADLINES,
                     first_content=anthropic_wire.content_started)


def observe(router: str, engine: str, *, injection: bool = True, translation: bool = True,
            only: tuple[str, ...] | None = None, deadlines: Deadlines | None = None) -> list[Observation]:
    """Every probe through the router (or `only` those named), judged and attributed."""
    deadlines = deadlines or DEADLINES
    out: list[Observation] = []
    probes = probe_requests(MODEL, injection=injection)
    probes["turn1-forced"] = forced_variant(probes["turn1"])
    answered: dict[str, str | None] = {}
    for name, body in probes.items():
        if only is not None and name not in only:
            continue
        since = log_total(engine)
        raw = send(router, "/v1/messages", body, deadlines)
        late = incremental(raw)
        for _ in range(2):
            # As the suite does: a CPU-starved client can read a paced stream in one go, so a
            # "buffered" verdict is re-checked; a buffering router buffers every time. The last
            # exchange is the one judged, translated and attributed.
            if not late:
                break
            since = log_total(engine)
            raw = send(router, "/v1/messages", body, deadlines)
            late = incremental(raw)
        verdict = check_exchange(raw, body, wire=ANTHROPIC, expect_model=MODEL)
        errors = [v for v in verdict.violations if v.is_error] + late
        answered[name] = verdict.answered_model
        obs = Observation(name, raw.status)
        if translation and raw.ok:
            hop, report = observe_hop(engine, body, verdict.message, client_wire=ANTHROPIC, since=since,
                                      route=raw.response_headers.get("x-router-route"),
                                      injection_probe=(name == "injection"), deadlines=deadlines)
            errors += report.errors
            obs.lost, obs.mappings = report.lost, report.mappings
        obs.violations = errors
        if errors:
            obs.attribution = attribute(body, errors, engine, wire=ANTHROPIC, expect_model=MODEL, since=since, extra_judge=engine_incremental,
                                        deadlines=deadlines)
        out.append(obs)
    if only is None or "turn1-quoted" in only:
        # the quoted wire variant (opencode): the same model must answer
        quoted = json.loads(json.dumps(probes["turn1"]))
        quoted["messages"][0]["content"][0]["text"] = '"' + quoted["messages"][0]["content"][0]["text"] + '"'
        since = log_total(engine)
        raw = send(router, "/v1/messages", quoted, deadlines)
        verdict = check_exchange(raw, quoted, wire=ANTHROPIC, expect_model=MODEL)
        obs = Observation("turn1-quoted", raw.status, [v for v in verdict.violations if v.is_error])
        if verdict.answered_model != answered.get("turn1"):
            obs.violations.append(violation(suite_checks.VARIANTS_SAME_MODEL, "the quoted prompt was answered by another model",
                                            expected=answered.get("turn1"), seen=verdict.answered_model))
        if obs.violations:
            def same_model_direct(raw_e: RawExchange, body_e: dict, wire_e: Dialect) -> list[Violation]:
                bare = check_exchange(send(engine, "/v1/messages", probes["turn1"], deadlines), probes["turn1"], wire=ANTHROPIC)
                mine = check_exchange(raw_e, body_e, wire=wire_e)
                if mine.answered_model != bare.answered_model:
                    return [violation(suite_checks.VARIANTS_SAME_MODEL, "the engine answers the variants with different models",
                                      expected=bare.answered_model, seen=mine.answered_model)]
                return []
            obs.attribution = attribute(quoted, obs.violations, engine, wire=ANTHROPIC, expect_model=MODEL, since=since,
                                        extra_judge=same_model_direct, deadlines=deadlines)
        out.append(obs)
    if only is not None and "count_tokens" not in only:
        return out
    # count_tokens
    ct = {k: v for k, v in probes["turn1"].items() if k not in ("stream", "max_tokens")}
    raw = send(router, "/v1/messages/count_tokens", ct, deadlines)
    verdict = check_exchange(raw, ct, wire=ANTHROPIC)
    obs = Observation("count_tokens", raw.status, [v for v in verdict.violations if v.is_error])
    if obs.violations:
        obs.attribution = attribute(ct, obs.violations, engine, wire=ANTHROPIC, client_path="/v1/messages/count_tokens", deadlines=deadlines)
    out.append(obs)
    return out


def run_stack(engine_faults=(), router_faults=(), upstream_api: str = "openai", **kw) -> list[Observation]:
    """A fresh engine and router (in threads), the probes through them, both stopped after."""
    with serve_engine_in_thread(faults=tuple(engine_faults)) as engine, \
            serve_router_in_thread(engine, faults=tuple(router_faults), upstream_api=upstream_api) as router:
        return observe(router, engine, **kw)


@dataclass
class Row:
    layer_side: str  # router | engine | none
    fault: str
    mode: str
    observations: list[Observation]

    @property
    def failing(self) -> list[Observation]:
        return [o for o in self.observations if o.violations]

    @property
    def checks(self) -> list[str]:
        return sorted({c for o in self.failing for c in o.check_ids})

    @property
    def engine_checks(self) -> list[str]:
        """What the direct replay against the engine showed (its own wire's rule ids)."""
        return sorted({v.check_id for o in self.failing if o.attribution for v in o.attribution.engine_violations if v.is_error})

    @property
    def verdicts(self) -> list[str]:
        return sorted({o.attribution.layer for o in self.failing if o.attribution})

    @property
    def verdict(self) -> str:
        v = self.verdicts
        return v[0] if len(v) == 1 else ("none" if not v else "+".join(v))


def matrix(router_faults=None, engine_faults=None, *, workers: int = 5) -> list[Row]:
    """One row per stack: the correct stack in both modes, each router fault, each engine fault.
    Stacks are independent servers on their own ports, so they run `workers` at a time."""
    plan = [("none", "(correct stack)", m, (), ()) for m in ("openai", "anthropic")]
    for fault, modes in (ROUTER_FAULTS_MODE if router_faults is None else router_faults).items():
        for mode in (modes,) if isinstance(modes, str) else modes:
            plan.append(("router", fault, mode, (fault,), ()))
    for fault, modes in (ENGINE_FAULTS_MODE if engine_faults is None else engine_faults).items():
        for mode in (modes,) if isinstance(modes, str) else modes:
            plan.append(("engine", fault, mode, (), (fault,)))

    def one(item) -> Row:
        side, fault, mode, rf, ef = item
        only = None if side == "none" else ("turn1",) if fault in SLOW_ENGINE_FAULTS else \
            ("turn1", "turn2") + EXTRA_PROBES.get(fault, ())
        deadlines = HANG_DEADLINES if fault in SLOW_ENGINE_FAULTS else DEADLINES
        return Row(side, fault, mode, run_stack(engine_faults=ef, router_faults=rf, upstream_api=mode, only=only,
                                                deadlines=deadlines))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, plan))


def render(rows: list[Row]) -> str:
    lines = ["| fault lives in | fault | router mode | caught through the router | engine replay showed | attributed to | expected |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        expected = {"none": "none", "router": "router", "engine": "engine"}[r.layer_side]
        mode = "translate (OpenAI chat)" if r.mode == "openai" else "pass-through (Anthropic)"
        lines.append(f"| {r.layer_side} | {r.fault} | {mode} | {', '.join(r.checks) or '—'} | "
                     f"{', '.join(r.engine_checks) or '—'} | {r.verdict} | {expected} |")
    return "\n".join(lines)


if __name__ == "__main__":
    rows = matrix()
    print(render(rows))
    for r in rows:
        if r.layer_side == "none":
            for o in r.observations:
                if o.lost or o.mappings:
                    print(f"\n[{r.mode}] {o.name}: mappings={o.mappings}\n  lost={o.lost}")
