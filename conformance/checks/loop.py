"""Agent-loop checks (area `loop`): did a whole multi-turn tool loop complete, and if not, why.

Rules:
- Every turn's exchange is judged by `conformance.checks.exchange.check_exchange` (stream
  grammar, structured tool calls, argument schemas, model identity, deadlines); the checks here
  are what only a loop can see: the task's result on disk, how the loop ended, and the driver's
  own bookkeeping (tool results paired with their calls, thinking sent back verbatim), which is
  verified on the outgoing request so a broken driver fails instead of blaming the target.
- Each rule is a check with its code (`@check(..., scope="loop")`). The loop driver hands
  `judge` one subject at each moment of a loop — `OutgoingRequest` (its own next request,
  before it is sent), `JudgedTurn` (a turn's exchange, judged), `LoopEnd` (the loop over) — and
  `judge` runs every loop check whose `applies` takes that subject, in registry order.
- A turn ends the loop when its exchange is unusable, or when a check finds an error in a turn
  that called tools (the client cannot go on); a turn without calls ends it with a final answer.
  The stop reason is judged only on a turn whose calls are well-formed (a cut last call is the
  stop reason's doing, `tools.call_cut`, not a malformed call).
- What the sandbox stopped of a turn's tool calls (`SandboxIncidents`: an escape refused by a
  rule, a limit reached) is a warning each (`loop.sandbox_refused`, `loop.sandbox_limit`): the
  model's choice, not the stack's fault, and never the reason a loop fails; it names the tool,
  the path or command and the rule or limit, so a report shows what a model tried.
- In the results, a check that says how the loop ended (`loop_outcome`) passes only when the loop
  ended with a final answer; a check judged on every turn passes when no turn broke it.
- Violations carry the 1-based turn in `where.turn`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.checks import tools as tool_checks
from conformance.core.failures import Violation
from conformance.core.registry import check, checks_for, register, violation
from conformance.core.verdict import outcome_of
from conformance.wire.conversation import ToolCall
from conformance.wire.dialect import Dialect

register(
    "loop.completed",
    "The multi-turn agent loop completed the scenario",
    description="The whole loop ran to a final answer with every turn's exchange valid and the task done on disk.",
    likely_cause="see the other violations of this loop: the first one names the turn that broke",
    scope="loop",
)
register(
    "loop.client_finished",
    "The real client CLI finished the task by itself within its deadline",
    description="The installed Claude Code / opencode CLI must exit 0, without reporting an error, before "
    "the run's deadline.",
    likely_cause="the client retries or waits forever on a response it cannot use (e.g. an incomplete "
    "message_start), or the target hangs; see the exchange violations of the same run",
    scope="live",
)


# ---------------------------------------------------------------------------------- the subjects
class ConversationReader(Protocol):
    """What the self-checks read of the client's conversation (`conformance.loop.conversation`)."""

    kept_kinds: tuple[str, ...]
    kept_pointer: str
    calls_pointer: str

    def last_turn(self, body: dict) -> tuple[Any, list, int] | None: ...
    def kept_blocks(self, message: Any, kind: str) -> list[dict]: ...
    def echoed_call_ids(self, sent: Any) -> list | None: ...
    def mismatched_results(self, sent: Any, after: list) -> list[str]: ...
    def answered_ids(self, after: list) -> list: ...


@dataclass(frozen=True)
class CheckedCall:
    """One tool call as the wire reads it and the loop's judgement of it: `problem` says why the
    client cannot run it (None when it can)."""

    call: ToolCall
    problem: str | None = None

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        """The tool name as text (a target may send a number there; the client reads it as text)."""
        return self.call.name if isinstance(self.call.name, str) else str(self.call.name)

    @property
    def arguments(self) -> Any:
        return self.call.arguments


def call_problem(call: ToolCall, offered: list[str]) -> str | None:
    """Why the client cannot run `call`: arguments not a JSON string (`not_text`) or not a JSON
    object (`parse_error`), no id, no tool name, a tool it did not offer."""
    if call.not_text is not None:
        return f"arguments are a {call.not_text}, not a JSON string"
    if call.parse_error is not None:
        return call.parse_error
    if not call.id:
        return "the call has no id"
    if not call.name:
        return "the call has no tool name"
    name = CheckedCall(call).name
    if name not in offered:
        return f"tool {name!r} was not offered (offered: {', '.join(offered[:12])}...)"
    return None


def parse_calls(message: Any, wire: Dialect, offered: list[str]) -> list[CheckedCall]:
    """The message's tool calls (the Dialect's reader), each with the loop's judgement."""
    return [CheckedCall(call, call_problem(call, offered)) for call in wire.tool_calls(message)]


@dataclass(frozen=True)
class OutgoingRequest:
    """The driver's own request for turn `turn`, answering the assistant turn `received`."""

    wire: Dialect
    conversation: ConversationReader
    body: dict
    received: Any
    turn: int


@dataclass(frozen=True)
class JudgedTurn:
    """One turn's exchange as `check_exchange` judged it, with its calls read."""

    wire: Dialect
    turn: int
    message: Any
    verdict: Any  # conformance.checks.exchange.ExchangeVerdict
    error: str  # what the transport says went wrong (for a turn without a message)
    stop_reason: Any = None
    calls: list[CheckedCall] = field(default_factory=list)
    forced: bool = False  # the request demanded a tool call

    @property
    def usable(self) -> bool:
        return not self.verdict.errors and isinstance(self.message, dict)

    @property
    def cut_call(self) -> CheckedCall | None:
        """The last call, when the judge found it cut by the output cap (`tools.call_cut`)."""
        cut = self.calls and any(v.check_id == tool_checks.CALL_CUT for v in self.verdict.violations)
        return self.calls[-1] if cut else None

    @property
    def malformed(self) -> list[CheckedCall]:
        cut = self.cut_call
        return [c for c in self.calls if c.problem and c is not cut]


@dataclass(frozen=True)
class LoopEnd:
    """The loop over: how it ended and how to read the task's result on disk."""

    ended: str  # final | turn_limit | exchange | driver
    turn_limit: int
    last_turn: int | None
    summary: str  # the turns, one line each (LoopReport.turn_summary)
    completion: Callable[[], list]  # the completion checks that do not hold (scenarios.CompletionFailure)


class Incident(Protocol):
    """What the sandbox stopped (`conformance.loop.sandbox.Incident`)."""

    kind: str  # "refused" | "limit"
    tool: str
    subject: str  # the path or command the call named
    rule: str  # the refusal rule, or the limit's name
    message: str


@dataclass(frozen=True)
class SandboxIncidents:
    """What the sandbox stopped while it ran turn `turn`'s tool calls."""

    turn: int
    incidents: list[Incident]


def _at(moment: type, when: Callable[[Any], bool] = lambda _: True) -> Callable[[Any], bool]:
    return lambda subject: isinstance(subject, moment) and when(subject)


def judge(subject: OutgoingRequest | JudgedTurn | SandboxIncidents | LoopEnd) -> list[Violation]:
    """Every loop check that applies to `subject`, in registry order: the violations found."""
    return [v for spec in checks_for("loop") if spec.applies_to(subject) for v in spec.run(subject)]


def loop_outcome(check_id: str, violations: list[Violation], ended: str) -> str | None:
    """A loop check's outcome in the results (None: no verdict). A check that says how the loop
    ended has none unless the loop ended with a final answer."""
    if violations:
        return outcome_of(violations)
    if ended == "final" or check_id not in _ENDINGS:
        return "passed"
    return None


# ---------------------------------------------------------------------------------- a turn's exchange
@check(
    "loop.exchange_failed",
    "A turn's request got no usable response",
    description="The turn's exchange ended without an accumulated message (connection refused, deadline, "
    "HTTP error); the exchange checks say which.",
    likely_cause="target down, hung or refusing the request: see the suite.* / protocol violations of the turn",
    scope="loop",
    applies=_at(JudgedTurn, lambda t: not t.usable),
)
def exchange_failed(turn: JudgedTurn) -> list[Violation]:
    if turn.verdict.errors:
        return []  # the exchange checks name what went wrong
    return [violation("loop.exchange_failed", "the turn produced no assistant message",
                      expected="an accumulated assistant message", seen=turn.error, turn=turn.turn)]


def _arguments_seen(message: Any, call: ToolCall) -> str:
    """The arguments as they arrived, for a report: the text, else the value at the call's pointer."""
    if call.raw is not None:
        return call.raw
    value: Any = message
    for token in call.pointer.split("/")[1:]:
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            value = value.get(token) if isinstance(value, dict) else None
    return json.dumps(value)


@check(
    "loop.tool_call_wellformed",
    "Every tool call has an id, an offered tool name and an object of arguments",
    description="Each tool_use block / tool_calls entry must carry a non-empty id, the name of a tool the "
    "request offered and arguments that parse to a JSON object; otherwise the client cannot run it. The last "
    "call of a turn cut by the output cap is loop.stop_reason instead.",
    likely_cause="engine tool parser missing or wrong (--tool-call-parser), or a router mangling tool call "
    "ids/names when translating between wire formats",
    scope="loop",
    applies=_at(JudgedTurn, lambda t: t.usable),
)
def tool_call_wellformed(turn: JudgedTurn) -> list[Violation]:
    return [violation(
        "loop.tool_call_wellformed", f"tool call {c.id or '?'} ({c.name or '?'}) is not well-formed: {c.problem}",
        expected="an id, an offered tool name and a JSON object of arguments",
        seen=_arguments_seen(turn.message, c.call)[:300], turn=turn.turn) for c in turn.malformed]


@check(
    "loop.stop_reason",
    "The loop ended with end_turn / stop",
    description="The final assistant message must end with stop_reason end_turn (Anthropic) or "
    "finish_reason stop (OpenAI), not max_tokens/length or an unexpected reason; a turn with tool calls must "
    "end with tool_use / tool_calls. A turn cut by the output cap inside its last tool call (tools.call_cut) "
    "ends the loop here too: the client cannot run a cut call.",
    likely_cause="an output cap (max_tokens) too low for the answer or the tool call, reasoning eating the "
    "budget, or a router mapping finish reasons wrongly",
    scope="loop",
    applies=_at(JudgedTurn, lambda t: t.usable and not t.malformed),
)
def stop_reason(turn: JudgedTurn) -> list[Violation]:
    stops, stop, calls = turn.wire.stops, turn.stop_reason, turn.calls
    cut = turn.cut_call
    if cut is not None:
        return [violation(
            "loop.stop_reason", f"the turn was {turn.wire.describe_cut(stop)} inside tool call "
            f"{len(calls)} ({cut.name or '?'})", seen=repr(stop), turn=turn.turn,
            expected="the call completed within the output cap, then " + " or ".join(stops.tool))]
    if not calls:
        if stop in stops.final:
            return []
        return [violation("loop.stop_reason", f"the final assistant turn ended with {stop!r}",
                          expected=" or ".join(stops.final), seen=repr(stop), turn=turn.turn)]
    # a turn forced to call a tool may end with one of the wire's forced_tool stops too
    if stop in stops.tool or (turn.forced and stop in stops.forced_tool):
        return []
    return [violation("loop.stop_reason", f"the turn called {len(calls)} tool(s) but ended with {stop!r}",
                      expected=" or ".join(stops.tool), seen=repr(stop), turn=turn.turn)]


# ---------------------------------------------------------------------------------- the driver's own request
@check(
    "loop.thinking_preserved",
    "Thinking blocks and their signatures are sent back verbatim",
    description="Claude Code sends the previous assistant turn's thinking blocks back unchanged, signature "
    "included; the driver checks its own next request does the same.",
    likely_cause="the loop driver itself is broken (this is a self-check of the harness, not the target)",
    scope="loop",
    applies=_at(OutgoingRequest, lambda r: r.conversation.last_turn(r.body) is not None),
)
def thinking_preserved(request: OutgoingRequest) -> list[Violation]:
    talk = request.conversation
    sent, _after, idx = talk.last_turn(request.body)
    where = f"/{request.wire.conversation_key}/{idx}"
    out = []
    for kind in talk.kept_kinds:
        want, got = talk.kept_blocks(request.received, kind), talk.kept_blocks(sent, kind)
        if want != got:
            out.append(violation(
                "loop.thinking_preserved", f"the {kind} blocks sent back differ from the ones received",
                expected=json.dumps(want)[:300], seen=json.dumps(got)[:300], turn=request.turn,
                pointer=where + talk.kept_pointer))
    return out


@check(
    "loop.tool_result_paired",
    "Every tool call got exactly one result, under its own id, in the next request",
    description="The driver checks its own next request: every tool_use id (tool_call id) of the previous "
    "assistant message is answered by exactly one tool_result (role:tool message) with that id.",
    likely_cause="the loop driver itself is broken (this is a self-check of the harness, not the target)",
    scope="loop",
    applies=_at(OutgoingRequest),
)
def tool_result_paired(request: OutgoingRequest) -> list[Violation]:
    talk, turn = request.conversation, request.turn
    last = talk.last_turn(request.body)
    if last is None:
        return [violation("loop.tool_result_paired", "the request carries no assistant message to answer",
                          expected="the previous assistant turn followed by its tool results", seen="none",
                          turn=turn)]
    sent, after, idx = last
    where = f"/{request.wire.conversation_key}/{idx}"
    want_ids = [call.id for call in request.wire.tool_calls(request.received)]
    out = []
    sent_ids = talk.echoed_call_ids(sent)
    if sent_ids is not None and sent_ids != want_ids:
        out.append(violation("loop.tool_result_paired", "the assistant tool_calls sent back differ from the ones received",
                             expected=json.dumps(want_ids), seen=json.dumps(sent_ids), turn=turn,
                             pointer=where + talk.calls_pointer))
    wrong_kind = talk.mismatched_results(sent, after)
    if wrong_kind:
        out.append(violation("loop.tool_result_paired", f"tool results of the wrong kind for their calls: {wrong_kind}",
                             expected="a custom_tool_call_output for a custom_tool_call, a function_call_output "
                             "for a function_call", seen=json.dumps(wrong_kind)[:300], turn=turn, pointer=where))
    got_ids = talk.answered_ids(after)
    missing = [i for i in want_ids if got_ids.count(i) == 0]
    doubled = sorted({i for i in got_ids if got_ids.count(i) > 1})
    unknown = [i for i in got_ids if i not in want_ids]
    if missing or doubled or unknown:
        out.append(violation(
            "loop.tool_result_paired",
            f"tool results do not pair with the tool calls (missing {missing}, repeated {doubled}, unknown {unknown})",
            expected=f"exactly one result for each of {want_ids}", seen=json.dumps(got_ids), turn=turn,
            pointer=f"/{request.wire.conversation_key}/{idx + 1}"))
    return out


# ---------------------------------------------------------------------------------- the sandbox
def _incidents(found: SandboxIncidents, kind: str, check_id: str, expected: str) -> list[Violation]:
    return [violation(check_id, f"{i.tool}: {i.rule}: {i.message}", expected=expected,
                      seen=f"{i.tool} {i.subject!r}", turn=found.turn)
            for i in found.incidents if i.kind == kind]


@check(
    "loop.sandbox_refused",
    "No tool call tried to reach outside the sandbox",
    description="The sandbox refused a tool call by one of its rules (docs/loop.md: a path outside the working "
    "directory or with '..', a link leading out, a shell operator, a variable or command substitution, a "
    "program outside the allowlist, a patch path with shell metacharacters). The message names the tool, the "
    "rule and the path or command. A warning: the model read the refusal as the tool's error and went on.",
    likely_cause="the model tried to leave its working directory, run another program or read an environment "
    "key (a hostile or confused model), or a router rewrote the tool call's arguments",
    severity="warning",
    scope="loop",
    judges="model",
    applies=_at(SandboxIncidents),
)
def sandbox_refused(found: SandboxIncidents) -> list[Violation]:
    return _incidents(found, "refused", "loop.sandbox_refused", "tool calls inside the working directory")


@check(
    "loop.sandbox_limit",
    "No tool call ran into a sandbox limit",
    description="A tool call reached one of the sandbox's limits (docs/loop.md: time per call, output bytes "
    "per call, bytes written, files created, path depth) and was stopped or cut there. The message names the "
    "tool, the limit and the path or command. A warning: the model read the limit as the tool's error or a "
    "cut result and went on.",
    likely_cause="the model asked for more than an agent task needs (a deep tree, a flood of output or files, "
    "a runaway search), on purpose or in a loop",
    severity="warning",
    scope="loop",
    judges="model",
    applies=_at(SandboxIncidents),
)
def sandbox_limit(found: SandboxIncidents) -> list[Violation]:
    return _incidents(found, "limit", "loop.sandbox_limit", "tool calls within the sandbox's limits")


# ---------------------------------------------------------------------------------- the loop's end
@check(
    "loop.turn_limit",
    "The loop finished within the scenario's turn limit",
    description="A loop that keeps calling tools past max_turns never completes for a real agent either.",
    likely_cause="the model repeats a tool call because the tool result never reached it (router dropping "
    "tool_result blocks or role:tool messages) or the engine ignores the conversation history",
    scope="loop",
    judges="model",
    applies=_at(LoopEnd, lambda e: e.ended == "turn_limit"),
)
def turn_limit(end: LoopEnd) -> list[Violation]:
    return [violation("loop.turn_limit", f"the loop was still calling tools after {end.turn_limit} turns",
                      expected=f"a final answer within {end.turn_limit} turns", seen=end.summary[-300:],
                      turn=end.turn_limit)]


@check(
    "loop.completion_check",
    "The scenario's completion check holds on disk after the loop",
    description="After the final answer the sandbox must hold what the task asked for (exact file content, "
    "a number computed from a seeded file, an applied edit).",
    likely_cause="the model answered without really using the tool results (a tool call sent as text, a "
    "canned answer, arguments lost in translation) or the router altered tool results between turns",
    scope="loop",
    judges="model",
    applies=_at(LoopEnd, lambda e: e.ended in ("final", "turn_limit")),
)
def completion_check(end: LoopEnd) -> list[Violation]:
    return [violation("loop.completion_check", f"{f.file}: the completion check `{f.rule}` does not hold",
                      expected=f.expected, seen=f.seen, turn=end.last_turn) for f in end.completion()]


# The checks that say how a loop ended: a loop that broke before its end gives them no verdict.
_ENDINGS = frozenset({exchange_failed.check_id, stop_reason.check_id, turn_limit.check_id,
                      completion_check.check_id})
