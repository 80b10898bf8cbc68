"""Reasoning and output-cap checks.

Rules:
- Thinking is sent as the clients send it (adaptive + each effort level; enabled + budget_tokens);
  the answer must arrive before max_tokens: `reasoning.answer_before_cap` fails when reasoning used
  the whole output budget and no answer text arrived.
- A max_tokens stop is reported as "truncated by the output cap (N tokens)", never as a wrong
  answer: `reasoning.output_cap` fails when an answer was cut by the cap.
- A complete answer that does not contain the expected fact is a model metric (warning):
  `reasoning.answer_correct`.
- Every id here is a probe verdict (scope `probe`). `reasoning.output_cap` judges the serving
  stack (`stack`: a cap of its own cuts the answer); `reasoning.answer_before_cap` and
  `reasoning.answer_correct` judge the model (`model`: reasoning that leaves no room for the
  answer, and what the answer says, are the model's). Built by `conformance.probes.reasoning`.
"""

from __future__ import annotations

from conformance.core.registry import register

ANSWER_BEFORE_CAP = "reasoning.answer_before_cap"
OUTPUT_CAP = "reasoning.output_cap"
ANSWER_CORRECT = "reasoning.answer_correct"

register(
    ANSWER_BEFORE_CAP,
    "with thinking on, the answer arrives before max_tokens (reasoning does not eat the whole budget)",
    likely_cause=(
        "the engine does not bound reasoning by the effort/budget the client sent (effort or "
        "budget_tokens ignored or not translated by a router), so thinking consumes max_tokens"
    ),
    scope="probe",
    judges="model",
)
register(
    OUTPUT_CAP,
    "the answer is not cut by an output cap (a max_tokens stop is reported as truncation)",
    likely_cause=(
        "an output cap lower than the client's max_tokens (an engine --max-tokens / max output "
        "setting, or a router rewriting max_tokens) truncates answers"
    ),
    scope="probe",
    judges="stack",
)
register(
    ANSWER_CORRECT,
    "a complete answer contains the fact the question asks for (model metric)",
    severity="warning",
    scope="probe",
    judges="model",
)
