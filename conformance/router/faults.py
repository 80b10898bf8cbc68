"""Router-side fault modes of the reference router (rows of the fault catalog, docs/faults.md,
that live in a router).

Rules: a fault is switched on by name (`--fault NAME`); an unknown name is refused with the list
of known ones. Each entry says what the router does wrong and which real router shipped it, so a
failing self-test reads as a story, not a code path.
"""

from __future__ import annotations

# The fault names, each written once: every module that switches on a fault uses these.
LOSSY_TRANSLATION = "lossy-translation"
STRICT_UNKNOWN_FIELD = "strict-unknown-field"
STRICT_ADAPTIVE_EFFORT = "strict-adaptive-effort"
STOP_SEQUENCE_MISSING = "stop-sequence-missing"
ROUTING_UNSTABLE_ACROSS_WIRE_VARIANTS = "routing-unstable-across-wire-variants"
BUFFERED_STREAM = "buffered-stream"
WRONG_MODEL = "wrong-model"
JAILBREAK_ROUTE_KEEPS_TOOLS = "jailbreak-route-keeps-tools"
FIRST_TOOL_CALL_ONLY = "first-tool-call-only"

ROUTER_FAULTS: dict[str, str] = {
    LOSSY_TRANSLATION: (
        "drops thinking blocks (request history and the engine's reasoning in the answer), signatures "
        "and cache_control, and rewrites tool ids on the way to the engine so tool results no longer "
        "pair with their calls (LiteLLM #41361; measured on claude-code-router 2.0.0, docs/layers.md)"
    ),
    STRICT_UNKNOWN_FIELD: (
        "closed request struct: rejects `context_management` with a 400 'Extra inputs are not "
        "permitted' (claude-code #21612, LiteLLM #26240)"
    ),
    STRICT_ADAPTIVE_EFFORT: (
        "rejects thinking {type: adaptive} together with output_config.effort (claude-code #68551, #29531)"
    ),
    STOP_SEQUENCE_MISSING: (
        "drops the required, nullable `stop_sequence` from message_delta / the non-stream message "
        "(exclude-none serialisation; vLLM #55324 shape, in a router)"
    ),
    ROUTING_UNSTABLE_ACROSS_WIRE_VARIANTS: (
        "a prompt wrapped in literal double quotes (opencode's wire form) is routed to another tier; "
        "the answering model differs (opencode's quoting: docs/wire-facts.md)"
    ),
    BUFFERED_STREAM: "buffers the whole upstream stream and releases it at the end (Claude Code gateway contract)",
    WRONG_MODEL: "silently falls back to another model: a different model answers (LiteLLM #28241)",
    JAILBREAK_ROUTE_KEEPS_TOOLS: (
        "claims an injection route (prompts that look like prompt injections go to a tool-less route) "
        "but keeps the tools on it, so an injection can still call them"
    ),
    FIRST_TOOL_CALL_ONLY: (
        "forwards only the first tool call of a turn (tool_calls[0]); the later calls vanish whole, so the "
        "client's stream is clean and only the engine's own answer shows what was lost"
    ),
}

# What the faulty tiers answer as. A real fallback is another deployment; the reference router
# labels the answer with the tier's model name so the substitution is visible in `model`.
FALLBACK_MODEL = "fallback-small-model"


def validate(faults: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    unknown = [f for f in faults if f not in ROUTER_FAULTS]
    if unknown:
        raise ValueError(
            f"unknown router fault(s) {unknown}; known router faults: {', '.join(sorted(ROUTER_FAULTS))} "
            "(engine faults are switched on the engine: `conformance engine --fault NAME`)"
        )
    return tuple(dict.fromkeys(faults))
