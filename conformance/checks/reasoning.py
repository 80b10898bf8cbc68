"""Reasoning and output-cap checks.

Rules:
- Thinking is sent as the clients send it (adaptive + each effort level; enabled + budget_tokens);
  the answer must arrive before max_tokens: `reasoning.answer_before_cap` fails when reasoning used
  the whole output budget and no answer text arrived.
- A max_tokens stop is reported as "truncated by the output cap (N tokens)", never as a wrong
  answer: `reasoning.output_cap` fails when an answer was cut by the cap.
- A complete answer that does not contain the expected fact is a model metric (warning):
  `reasoning.answer_correct`.
- Built by `conformance.probes.reasoning`.
"""

from __future__ import annotations

from conformance.core.registry import register

register(
    "reasoning.answer_before_cap",
    "with thinking on, the answer arrives before max_tokens (reasoning does not eat the whole budget)",
    likely_cause=(
        "the engine does not bound reasoning by the effort/budget the client sent (effort or "
        "budget_tokens ignored or not translated by a router), so thinking consumes max_tokens"
    ),
)
register(
    "reasoning.output_cap",
    "the answer is not cut by an output cap (a max_tokens stop is reported as truncation)",
    likely_cause=(
        "an output cap lower than the client's max_tokens (an engine --max-tokens / max output "
        "setting, or a router rewriting max_tokens) truncates answers"
    ),
)
register(
    "reasoning.answer_correct",
    "a complete answer contains the fact the question asks for (model metric)",
    severity="warning",
)
