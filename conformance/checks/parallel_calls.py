"""client_wire.parallel_calls.all_survive: several tool calls asked for in one turn all arrive.

Rules:
- It judges the model: answering one call at a time is a valid choice, so fewer calls than asked
  are a metric (`info`, with the count), never a gate failure by themselves.
- Fewer calls fail only with evidence that the stack lost them: the engine behind a router
  (`--conformance-engine-url`), given the request it received, emitted more calls than reached
  the client (the router dropped them: the reference router's fault `first-tool-call-only`); or
  the stream itself shows a call lost, a tool-call rule of the wire grammar failed (an index
  skipped, a call's arguments cut off: `stream_loss`, by the last part of the rule's id on any
  wire).
"""

from __future__ import annotations

from conformance.core.registry import register, violation
from conformance.core.verdict import Verdict

PARALLEL_CALLS = register(
    "client_wire.parallel_calls.all_survive",
    "several tool calls asked for in one turn all arrive",
    description=("A model may answer one call at a time (a metric); fewer calls fail only with evidence: the engine "
                 "emitted more than reached the client, or the stream shows a call cut or an index skipped."),
    likely_cause=(
        "a router keeps only tool_calls[0] (seen with --conformance-engine-url), or the tool-call parser breaks "
        "off after the first call (llama.cpp #14101, vLLM #57791)"
    ),
    judges="model",
).id
# The wire-grammar rules whose failure shows a tool call lost in the stream itself (by the last
# part of their id, on any wire): an index skipped, a call's arguments cut off.
STREAM_LOSS_RULES = frozenset({"tool_call_index", "block_index", "index", "tool_input_json", "tool_arguments_json",
                               "item_open"})


def stream_loss(violations: list) -> str | None:
    """The first error of a tool-call rule of the wire grammar (a call lost in the stream), else None."""
    for v in violations:
        if getattr(v, "is_error", False) and ".stream." in v.check_id and \
                v.check_id.rsplit(".", 1)[-1] in STREAM_LOSS_RULES:
            return f"{v.check_id}: {v.message}"
    return None


def parallel_outcome(calls: list, wanted: int, *, emitted: int | None = None, loss: str | None = None) -> Verdict:
    """`wanted` calls asked for, `calls` arrived; `emitted`: how many the engine behind the
    router produced for the request it received (None: unknown); `loss`: the stream's own
    evidence of a lost call (`stream_loss`). See the module rules."""
    got = f"{len(calls)} of the {wanted} tool calls asked for in one turn arrived ({', '.join(c.name for c in calls) or 'none'})"
    if len(calls) >= wanted:
        return Verdict(PARALLEL_CALLS, "passed", note=f"{len(calls)} calls in one turn")
    if emitted is not None and emitted > len(calls):
        return Verdict.of(violation(
            PARALLEL_CALLS, f"{got}, but the engine emitted {emitted} for the request it received: the router "
            f"dropped {emitted - len(calls)}", expected=f"the engine's {emitted} tool calls", seen=len(calls)))
    if loss is not None:
        return Verdict.of(violation(PARALLEL_CALLS, f"{got}, and the stream shows a call lost ({loss})",
                                    expected=f">= {wanted} tool calls, none cut", seen=len(calls)))
    engine = f"; the engine itself emitted {emitted}" if emitted is not None else ""
    return Verdict(PARALLEL_CALLS, "info", note=f"{got}: the model's choice, a metric (no evidence the stack lost a "
                                                f"call{engine})")
