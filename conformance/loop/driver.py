"""The agent-loop driver: one scenario on one wire, as the real client runs it, turn by turn.

Rules:
- The first request is a real client's captured one (`conformance.loop.templates`); the tools
  the model calls run in a sandbox playing that client's persona (an unknown client's persona is
  built from the shapes of the tools it offers, `persona_by_shape`), and the results go back as
  the client sends them (`conformance.loop.conversation`).
- Every turn is sent with deadlines (`conformance.net.transport`) and judged by
  `check_exchange`; the loop's own rules are the loop checks (`conformance.checks.loop.judge`):
  before turn k+1 goes, the driver's own request (every tool call id answered exactly once,
  thinking sent back unchanged); after each turn, its exchange, its calls and its stop reason; at
  the end, the turn limit and the task on disk. The driver decides nothing a check decides.
- The sandbox runs under its limits (`conformance.loop.limits`, each call's time within the
  turn deadline); what it stopped in a turn's calls is judged after the turn
  (`SandboxIncidents`: `loop.sandbox_refused`, `loop.sandbox_limit`). The sandbox is removed when
  the loop ends, failed or not, unless `keep_sandbox` is set.
- `check_outgoing` is a module function, not a method, so a subclass that breaks the bookkeeping
  (the self-tests' broken drivers override `echo_assistant`, `result_messages`, `run_call`)
  cannot also silence it.
- Everything about the wire is the Dialect's: the tool calls, the stop vocabulary, the offered
  tools, forcing a call (`forcing`: on the Anthropic wire thinking goes off for the whole loop,
  as a forced Claude Code loop runs with MAX_THINKING_TOKENS=0). This module compares against no
  wire's or client's name.
"""

from __future__ import annotations

import copy
import os
import random
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.checks.loop import (
    CheckedCall,
    JudgedTurn,
    LoopEnd,
    OutgoingRequest,
    SandboxIncidents,
    judge,
    parse_calls,
)
from conformance.clients.persona import Persona, persona_by_shape, tool_key
from conformance.core.failures import Violation
from conformance.loop.conversation import conversation_for
from conformance.loop.limits import SandboxLimits
from conformance.loop.report import LoopReport, TurnRecord
from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import Scenario, check_completion
from conformance.loop.templates import (
    Template,
    build_first_request,
    find_stored_history,
    find_template,
    offers_namespace,
)
from conformance.loop.voices import ToolOutcome
from conformance.net.client import salted, serialize
from conformance.net.target import Target
from conformance.net.transport import Deadlines, RawExchange
from conformance.wire.dialect import Dialect


def check_outgoing(body: dict, wire: Dialect, received: Any, turn: int) -> list[Violation]:
    """The driver's own bookkeeping on the request it is about to send as turn `turn`: the
    previous assistant turn came back verbatim and every tool call got exactly one result."""
    return judge(OutgoingRequest(wire, conversation_for(wire), body, received, turn))


def persona_for(template: Template, body: dict, wire: Dialect) -> Persona:
    """The template's client's persona; a profile without one (a client the suite does not know)
    gets one built from the shapes of the tools the first request offers."""
    persona = template.profile.persona
    if persona.tools:
        return persona
    return persona_by_shape({tool_key(t.name, t.namespace): t.schema for t in wire.offered_tool_specs(body)})


def scenario_runs_on(scenario: Scenario, wire: Dialect) -> bool:
    """Whether the client of `wire` can run `scenario` (an attached MCP server needs a client that
    offers its tools in a namespace; a resumed session, one that resends the stored history)."""
    talk = conversation_for(wire)
    return (not scenario.mcp_server or scenario.mcp_server in talk.mcp_servers) and (
        not scenario.resume or talk.resumes_sessions)


@dataclass
class _Run:
    """The state of a loop under way."""

    body: dict  # the request of the next turn
    offered: list[str]  # the tools the first request offers
    forced: bool  # the next request demands a tool call (a scenario's turn 1)
    original_choice: Any  # the template's own tool_choice, restored after a forced turn
    cache_breakpoint: dict | None  # the client's one cache breakpoint (conversation.cache_breakpoint)
    received: Any = None  # the assistant turn the next request answers


class LoopDriver:
    """Runs one scenario against a target on one wire. Subclass hooks (`echo_assistant`,
    `result_messages`, `run_call`) exist so the self-tests can prove a broken driver fails."""

    def __init__(self, target: str, wire: Dialect, *, model: str | None = None, expect_model: str | None = None,
                 api_key: str | None = None, deadlines: Deadlines | None = None, template: Template | None = None,
                 captured_root: Path | str | None = None, workdir: Path | str | None = None,
                 keep_sandbox: bool = False, sender=None, salt_token: str | None = None,
                 limits: SandboxLimits | None = None) -> None:
        self.target = target
        self.wire = wire
        self.conversation = conversation_for(wire)  # how the client carries the conversation on
        self.model = model
        self.expect_model = expect_model if expect_model is not None else model
        self.api_key = api_key or "sk-conformance"
        self.deadlines = deadlines or Deadlines(connect=10, first_content=60, total=180)
        self.captured_root = captured_root
        self.template_given = template is not None
        self.template = template or find_template(wire, captured_root)
        self._in_use = self.template  # the template of the run under way (a scenario may need another)
        self.workdir = Path(workdir) if workdir else None
        self.keep_sandbox = keep_sandbox
        # sender(captured_request, body_bytes) -> RawExchange; default: the transport with deadlines.
        # The suite passes its session's sender so a dead target is noticed once for the whole run.
        self.sender = sender
        self.salt_token = salt_token  # --conformance-salt: a run token at the start of the system prompt
        self.limits = limits or SandboxLimits()  # the sandbox's, each call's time kept within the deadline
        self._message: Any = None  # the accumulated message whose calls are being answered

    # ----- hooks (overridden only by self-tests)
    def echo_assistant(self, message: dict) -> dict | list[dict]:
        return self.conversation.echo_assistant(message)

    def result_messages(self, calls: list[CheckedCall], outcomes: list[ToolOutcome]) -> list[dict]:
        return self.conversation.results_for(self._message, [c.id for c in calls], outcomes)

    def run_call(self, sandbox: Sandbox, call: CheckedCall) -> ToolOutcome:
        if call.problem:
            return sandbox.refusal(f"The arguments provided to the tool are invalid: {call.problem}")
        # a freeform (custom) tool's input is its raw text, never JSON
        args = {"input": call.call.raw} if call.call.kind == "custom" else call.arguments
        return sandbox.run(call.name, args, namespace=call.call.namespace)

    # ----- the loop
    def run(self, scenario: Scenario, *, rng_seed: int | None = None, max_turns: int | None = None) -> LoopReport:
        rng_seed = rng_seed if rng_seed is not None else secrets.randbits(32)
        values = scenario.draw(random.Random(rng_seed))
        self._in_use = template = self._template_for(scenario)
        root = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"loop-{scenario.id}-", dir=self.workdir)))
        report = LoopReport(scenario.id, self.wire, template.client, self.target, template.source, rng_seed,
                            values, str(root))
        limit = max_turns or scenario.max_turns
        start = time.monotonic()
        try:
            state = self._first_request(template, scenario, root, report)
            sandbox = Sandbox(root, persona_for(template, state.body, self.wire),
                              limits=self.limits.within(self.deadlines.total))
            sandbox.seed(scenario.seed_files(values))
            report.ended = self._turns(state, sandbox, report, limit)
            last = report.turns[-1].turn if report.turns else None
            report.violations.extend(judge(LoopEnd(
                report.ended, limit, last, report.turn_summary(),
                lambda: check_completion(scenario, values, sandbox.read_text))))
        finally:
            report.elapsed = time.monotonic() - start
            if not self.keep_sandbox:  # passed or not: what a model wrote goes with its sandbox
                shutil.rmtree(root, ignore_errors=True)
        return report

    def _template_for(self, scenario: Scenario) -> Template:
        """The driver's template, or the client's own capture with the scenario's MCP server
        attached when the corpus has one (and no template was given)."""
        namespace = self.conversation.mcp_namespace(scenario.mcp_server) if scenario.mcp_server else None
        if namespace and not self.template_given and not offers_namespace(self.template.request.body, namespace):
            found = find_template(self.wire, self.captured_root, namespace=namespace)
            if offers_namespace(found.request.body, namespace):
                return found
        return self.template

    def _first_request(self, template: Template, scenario: Scenario, root: Path, report: LoopReport) -> _Run:
        body = build_first_request(template, scenario.prompt, root, self.model)
        if self.salt_token:
            body = salted(body, self.wire, self.salt_token)
        if scenario.mcp_server:
            body = self.conversation.with_mcp_server(body, scenario.mcp_server)  # unless the capture has it
        if scenario.resume:
            history, source = find_stored_history(self.wire, self.captured_root)
            body = self.conversation.resumed(body, history)
            report.template += f"; resumed session {source}"
        state = _Run(body, list(self.wire.offered_tools(body)), scenario.tool_choice_required, body.get("tool_choice"),
                     self.conversation.cache_breakpoint(body))
        if state.forced:  # the wire's "any tool" choice, kept valid
            state.body = self.wire.forcing(body)
        return state

    def _turns(self, state: _Run, sandbox: Sandbox, report: LoopReport, limit: int) -> str:
        """Run turns until one ends the loop; how it ended (final | exchange | driver | turn_limit)."""
        for turn in range(1, limit + 1):
            if state.received is not None:
                own = check_outgoing(state.body, self.wire, state.received, turn)
                if own:
                    report.violations.extend(own)
                    return "driver"
            record, judged = self._exchange(state, turn)
            report.turns.append(record)
            report.violations.extend(record.verdict.violations)
            found = judge(judged)
            report.violations.extend(found)
            if not judged.usable:
                return "exchange"
            if not record.calls:
                return "final"
            if any(v.is_error for v in found):
                return "exchange"
            record.outcomes = [self.run_call(sandbox, c) for c in record.calls]
            report.violations.extend(judge(SandboxIncidents(turn, sandbox.take_incidents())))
            self._next_request(state, record, judged.message)
        return "turn_limit"

    def _exchange(self, state: _Run, turn: int) -> tuple[TurnRecord, JudgedTurn]:
        """Send the turn's request and judge its exchange."""
        raw = self._send(state.body)
        verdict = check_exchange(raw, state.body, wire=self.wire, expect_model=self.expect_model, turn=turn)
        record = TurnRecord(turn, state.body, raw, verdict)
        message = verdict.message
        if isinstance(message, dict):
            record.stop_reason = self.wire.stop_reason(message)
            record.calls = parse_calls(message, self.wire, state.offered)
        return record, JudgedTurn(self.wire, turn, message, verdict, raw.error or f"HTTP {raw.status}",
                                  record.stop_reason, record.calls, state.forced)

    def _next_request(self, state: _Run, record: TurnRecord, message: dict) -> None:
        """The turn's calls answered as the client answers them; forcing was for turn 1 only."""
        body = state.body
        if state.forced:  # back to what the client sends
            body = copy.deepcopy(body)
            if state.original_choice is None:
                body.pop("tool_choice", None)
            else:
                body["tool_choice"] = state.original_choice
            state.forced = False
        self._message = message
        state.received = copy.deepcopy(message)
        state.body = self.conversation.with_turn(body, self.echo_assistant(message),
                                                 self.result_messages(record.calls, record.outcomes), state.cache_breakpoint)

    def _send(self, body: dict) -> RawExchange:
        req = self._in_use.request
        if self.sender is not None:
            return self.sender(req, serialize(body))
        # One client per turn (each turn runs on its own event loop) on the process's one TLS context.
        return Target(self.target, self.api_key, self.deadlines).send_sync(
            self.wire, req.path, serialize(body), query=req.query, captured_headers=req.headers)


def run_scenario(target: str, wire: Dialect, scenario: Scenario, **kwargs) -> LoopReport:
    """One call: build a driver and run the scenario (kwargs: LoopDriver's, plus rng_seed)."""
    rng_seed = kwargs.pop("rng_seed", None)
    return LoopDriver(target, wire, **kwargs).run(scenario, rng_seed=rng_seed)
