"""Agent-loop checks (area `loop`): did a whole multi-turn tool loop complete, and if not, why.

Rules:
- Every turn's exchange is judged by `conformance.checks.exchange.check_exchange` (stream
  grammar, structured tool calls, argument schemas, model identity, deadlines); the checks here
  are what only a loop can see: the task's result on disk, how the loop ended, and the driver's
  own bookkeeping (tool results paired with their calls, thinking sent back verbatim), which is
  verified on the outgoing request so a broken driver fails instead of blaming the target.
- Violations carry the 1-based turn in `where.turn`.
"""

from __future__ import annotations

from conformance.core.registry import register

register(
    "loop.completed",
    "The multi-turn agent loop completed the scenario",
    description="The whole loop ran to a final answer with every turn's exchange valid and the task done on disk.",
    likely_cause="see the other violations of this loop: the first one names the turn that broke",
)
register(
    "loop.completion_check",
    "The scenario's completion check holds on disk after the loop",
    description="After the final answer the sandbox must hold what the task asked for (exact file content, "
    "a number computed from a seeded file, an applied edit).",
    likely_cause="the model answered without really using the tool results (a tool call sent as text, a "
    "canned answer, arguments lost in translation) or the router altered tool results between turns",
)
register(
    "loop.stop_reason",
    "The loop ended with end_turn / stop",
    description="The final assistant message must end with stop_reason end_turn (Anthropic) or "
    "finish_reason stop (OpenAI), not max_tokens/length or an unexpected reason; a turn with tool calls must "
    "end with tool_use / tool_calls. A turn cut by the output cap inside its last tool call (tools.call_cut) "
    "ends the loop here too: the client cannot run a cut call.",
    likely_cause="an output cap (max_tokens) too low for the answer or the tool call, reasoning eating the "
    "budget, or a router mapping finish reasons wrongly",
)
register(
    "loop.turn_limit",
    "The loop finished within the scenario's turn limit",
    description="A loop that keeps calling tools past max_turns never completes for a real agent either.",
    likely_cause="the model repeats a tool call because the tool result never reached it (router dropping "
    "tool_result blocks or role:tool messages) or the engine ignores the conversation history",
)
register(
    "loop.tool_call_wellformed",
    "Every tool call has an id, an offered tool name and an object of arguments",
    description="Each tool_use block / tool_calls entry must carry a non-empty id, the name of a tool the "
    "request offered and arguments that parse to a JSON object; otherwise the client cannot run it. The last "
    "call of a turn cut by the output cap is loop.stop_reason instead.",
    likely_cause="engine tool parser missing or wrong (--tool-call-parser), or a router mangling tool call "
    "ids/names when translating between wire formats",
)
register(
    "loop.tool_result_paired",
    "Every tool call got exactly one result, under its own id, in the next request",
    description="The driver checks its own next request: every tool_use id (tool_call id) of the previous "
    "assistant message is answered by exactly one tool_result (role:tool message) with that id.",
    likely_cause="the loop driver itself is broken (this is a self-check of the harness, not the target)",
)
register(
    "loop.thinking_preserved",
    "Thinking blocks and their signatures are sent back verbatim",
    description="Claude Code sends the previous assistant turn's thinking blocks back unchanged, signature "
    "included; the driver checks its own next request does the same.",
    likely_cause="the loop driver itself is broken (this is a self-check of the harness, not the target)",
)
register(
    "loop.exchange_failed",
    "A turn's request got no usable response",
    description="The turn's exchange ended without an accumulated message (connection refused, deadline, "
    "HTTP error); the exchange checks say which.",
    likely_cause="target down, hung or refusing the request: see the suite.* / protocol violations of the turn",
)
register(
    "loop.client_finished",
    "The real client CLI finished the task by itself within its deadline",
    description="The installed Claude Code / opencode CLI must exit 0, without reporting an error, before "
    "the run's deadline.",
    likely_cause="the client retries or waits forever on a response it cannot use (e.g. an incomplete "
    "message_start), or the target hangs; see the exchange violations of the same run",
)
