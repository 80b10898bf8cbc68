"""Context-edge checks: needle recall, over-limit refusal, advertised vs accepted limit.

Rules:
- Prompt lengths are set from the target's own token counts (count_tokens, a tokenize endpoint, or
  usage.input_tokens of a probe), never from a characters-per-token guess.
- A needle missed at depth 0 near the limit is a failure (silent truncation drops the start of the
  prompt first): `context.needle_depth0`. Misses at other depths are a model metric:
  `context.needle_recall` (info).
- Above the limit the target must refuse cleanly and fast (a 4xx with a message):
  `context.over_limit_refused`; silent truncation, a hang, a 5xx or a crash fail it.
- The advertised limit (vLLM max_model_len in /v1/models, llama.cpp n_ctx in /props) must be the
  one the target accepts: `context.advertised_matches`.
- Every id here is a probe verdict (scope `probe`). Each judges the serving stack (`stack`: it
  keeps the whole prompt, refuses an over-limit one cleanly, advertises its real limit) except
  `context.needle_recall`, which judges the model (`model`: recall away from the start of the
  prompt is what the model attends to). Built by `conformance.probes.context`.
"""

from __future__ import annotations

from conformance.core.registry import register

NEEDLE_DEPTH0 = "context.needle_depth0"
NEEDLE_RECALL = "context.needle_recall"
OVER_LIMIT_REFUSED = "context.over_limit_refused"
ADVERTISED_MATCHES = "context.advertised_matches"
USABLE_AGENT_CONTEXT = "context.usable_agent_context"
LIMIT_KNOWN = "context.limit_known"

register(
    NEEDLE_DEPTH0,
    "a needle at the very start of a prompt near the context limit is recalled",
    likely_cause=(
        "the engine or a router silently truncates long prompts from the start (a truncation or "
        "sliding-window setting, e.g. a prompt-truncation option or a router trimming messages) "
        "instead of refusing them"
    ),
    scope="probe",
    judges="stack",
)
register(
    NEEDLE_RECALL,
    "needle recall at depths 0/25/50/75/100% at several lengths (model metric)",
    severity="info",
    scope="probe",
    judges="model",
)
register(
    OVER_LIMIT_REFUSED,
    "a prompt above the context limit is refused fast with a 4xx and a message",
    likely_cause=(
        "the engine truncates, hangs or crashes on an over-long prompt instead of validating its "
        "length up front (or a router swallows the engine's 400)"
    ),
    scope="probe",
    judges="stack",
)
register(
    ADVERTISED_MATCHES,
    "the advertised context limit is the limit the target accepts",
    likely_cause=(
        "the advertised length (e.g. --max-model-len / n_ctx) is not the one enforced: a router "
        "overrides it, or the engine was started with a different value than the one it reports"
    ),
    scope="probe",
    judges="stack",
)
register(
    USABLE_AGENT_CONTEXT,
    "usable agent context given each client's max_tokens (figures)",
    severity="info",
    likely_cause="the engine counts input + max_tokens against the limit, so a client's large max_tokens eats context",
    scope="probe",
    judges="stack",
)
register(
    LIMIT_KNOWN,
    "the context limit is known (an option or what the target advertises)",
    severity="warning",
    likely_cause="the target advertises no context length: pass --conformance-context-limit",
    scope="probe",
    judges="stack",
)
