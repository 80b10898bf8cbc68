"""The translation rules over the answer: the stop reason and the usage that reach the client.

Rules:
- Both answers are read through their wire's Dialect (stop reason, tool calls, usage keys); the
  rules judge a hop only when both are known (`Hop.answered`).
- Stop reason (`translation.stop_reason_mapped`): an engine turn that ends with tool calls under
  any wire's word for "hand the calls to the client" must reach the client as the client wire's
  tool stop (else the agent never runs the tool: LiteLLM #34692). On a pass-through the stop
  arrives unchanged; translated, it is one of the stops the engine's Dialect says a faithful
  translation may carry (`Dialect.anthropic_stops`: chat `stop` -> end_turn or stop_sequence);
  a reason no Dialect maps is not judged.
- Usage (`translation.usage_carried`): usage the engine reported reaches the client (error when
  it does not); on an exact recording changed values are a warning. The prompt counts the cached
  parts too (a wire that counts them apart, Anthropic, has them added).
"""

from __future__ import annotations

from conformance.checks.translation import ROUTER, STOP_REASON, USAGE, Applies, Hop
from conformance.core.failures import Violation
from conformance.core.registry import check, violation
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS


def _answered(hop: Hop) -> bool:
    return hop.answered


def tool_finish(client_wire: Dialect) -> frozenset[str]:
    """Every wire's words for "the turn hands tool calls to the client" (a router may relay any of
    them): each wire's tool stops, and the reasons it maps to the client wire's tool stop."""
    return frozenset(s for d in DIALECTS.values() for s in d.stops.tool) | frozenset(
        r for d in DIALECTS.values() for r, a in d.stops.to_anthropic.items() if a in client_wire.stops.tool)


@check(STOP_REASON, "the engine's finish reason reaches the client mapped correctly (tool_calls -> tool_use, "
       "length -> max_tokens, stop -> end_turn/stop_sequence)",
       likely_cause=f"{ROUTER} maps every finish_reason to end_turn, so the agent never runs the tool (LiteLLM #34692)",
       scope="hop", order=7, applies=Applies(translated=_answered))
def stop_reason_mapped(hop: Hop) -> list[Violation]:
    engine, client = hop.engine_wire, hop.client_wire
    seen = client.stop_reason(hop.client_response)
    finish = engine.stop_reason(hop.engine_response)
    calls = bool(engine.tool_calls(hop.engine_response))
    if calls and finish in tool_finish(client) and seen not in client.stops.tool:
        return [violation(STOP_REASON, f"the engine finished with {finish} after a tool call, the client got stop_reason {seen}",
                          expected=client.stops.tool[0], seen=seen)]
    if hop.pass_through:
        if finish and seen != finish:
            return [violation(STOP_REASON, f"stop_reason {finish} reached the client as {seen}", expected=finish, seen=seen)]
        return []
    allowed = engine.anthropic_stops(finish)
    if allowed and seen not in allowed:
        return [violation(STOP_REASON, f"{engine.stops.field} {finish} reached the client as stop_reason {seen}",
                          expected=" or ".join(sorted(allowed)), seen=seen)]
    return []


def _tokens(usage: dict, *keys: str) -> int:
    return sum(int(usage.get(k) or 0) for k in keys)


def _prompt_tokens(wire: Dialect, usage: dict) -> int:
    """The whole prompt, cached parts included (Anthropic counts those apart from input_tokens)."""
    return _tokens(usage, wire.input_tokens_key, *wire.cached_input_keys)


@check(USAGE, "the engine's token usage reaches the client (input_tokens, output_tokens)",
       likely_cause=f"{ROUTER} drops the final usage chunk (no stream_options.include_usage) or recomputes usage",
       scope="hop", order=8, applies=Applies(translated=_answered))
def usage_carried(hop: Hop) -> list[Violation]:
    engine, client = hop.engine_wire, hop.client_wire
    eu = engine.usage(hop.engine_response) or {}
    cu = client.usage(hop.client_response) or {}
    e_in, e_out = _prompt_tokens(engine, eu), _tokens(eu, engine.output_tokens_key)
    c_in, c_out = _prompt_tokens(client, cu), _tokens(cu, client.output_tokens_key)
    if (e_in and not c_in) or (e_out and not c_out):
        return [violation(USAGE, "the engine reported usage that never reached the client",
                          expected=f"input {e_in}, output {e_out}", seen=f"input {c_in}, output {c_out}", pointer="/usage")]
    if hop.exact and (e_in, e_out) != (c_in, c_out) and e_in and e_out:
        return [violation(USAGE, "usage reached the client changed", severity="warning",
                          expected=f"input {e_in}, output {e_out}", seen=f"input {c_in}, output {c_out}", pointer="/usage")]
    return []
