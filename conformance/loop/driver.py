"""The agent-loop driver: one scenario, one dialect, as the real client runs it, turn by turn.

Rules:
- The first request is a real client's captured first request (`find_template`): Claude Code's
  for the Anthropic wire, opencode's OpenAI-compatible one for the OpenAI wire, taken from
  `conformance.core.paths.captured_dir()`; the bundled recordings in `conformance/loop/templates/` are
  only a fallback when the corpus holds none. Only three things change in it: the working
  directory named in the system text becomes the sandbox root, the user's prompt text becomes
  the scenario prompt (inside Claude Code's structure: `<system-reminder>` blocks, the
  `role: system` entry inside messages and cache_control stay; opencode's literal quotes around
  the prompt stay), and `model` when the run asks for one.
- Every turn is sent with deadlines (`conformance.net.transport`) and judged by
  `check_exchange`; the first turn whose exchange has errors ends the loop and names the turn.
- Everything about the wire is the Dialect's (`conformance.wire.dialect`): the tool calls of the
  accumulated message are its `ToolCall`s (`parse_calls` adds only the loop's judgement: no id, no
  name, not offered, arguments not a JSON object / not a JSON string), the stop reason and the
  stop vocabulary are its `stops` (`final`, `tool`, `forced_tool` for a turn forced to call a
  tool). This module compares against no wire's name.
- Tool calls run in the sandbox and are appended exactly as the client does (measured on Claude
  Code 2.1.197 and opencode 1.18.33, see docs/loop.md); the shapes per wire are the client's
  `Conversation` (`conformance.loop.conversation`): Anthropic — the assistant message with its
  content blocks verbatim, then one user message of tool_result blocks, one cache breakpoint moved
  to the last block; OpenAI — the assistant message with `tool_calls`, then one `role: tool`
  message per call with its `tool_call_id`.
- Before sending turn k+1 the driver checks its own request (`check_outgoing`): every tool call
  id answered exactly once, thinking blocks sent back unchanged. That check is a module
  function, not a method, so a subclass that breaks the bookkeeping cannot also silence it.
- The loop passes only if: the scenario's completion check holds on disk, the last turn ended
  with end_turn / stop, the turn limit was not hit, every tool call was well-formed, and every
  exchange was valid. A turn cut by the output cap inside its last tool call (`tools.call_cut`)
  ends the loop as `loop.stop_reason` — the client cannot run a cut call — not as
  `loop.tool_call_wellformed`. `LoopReport.raise_for_failure()` raises a ConformanceFailure that names the
  turn that broke and why.
"""

from __future__ import annotations

import copy
import json
import random
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import conformance.checks.loop  # noqa: F401  (registers the loop.* checks)
from conformance.capture.corpus import iter_capture_files
from conformance.capture.format import (
    Capture,
    CapturedRequest,
    CaptureFormatError,
    load_capture,
)
from conformance.checks import tools as tool_checks
from conformance.core.failures import HasViolations, Violation
from conformance.core.paths import captured_dir
from conformance.core.registry import violation
from conformance.core.results import Result
from conformance.loop.conversation import Conversation, conversation
from conformance.loop.sandbox import Sandbox, ToolOutcome
from conformance.loop.scenarios import Scenario, check_completion
from conformance.loop.tools import CLIENT_FOR_API, LOOP_TOOLS, offered_tool_names
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.text import ConformanceFailure
from conformance.wire.dialect import Dialect, ToolCall, dialect

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


class TemplateError(LookupError):
    pass


# ---------------------------------------------------------------------------------- templates
@dataclass(frozen=True)
class Template:
    request: CapturedRequest
    source: str  # capture id and file, for reports

    @property
    def api(self) -> str:
        return self.request.api


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.\-+]", v))


def _is_generation_path(path: str, wire: Dialect) -> bool:
    """The wire's generation endpoint under any base path (a client's base URL may carry its own
    prefix before `/v1`, or none); count_tokens and /responses are not a loop's first request."""
    return path.rstrip("/").endswith(wire.generation_path.removeprefix("/v1"))


def _first_loop_request(cap: Capture, api: str) -> CapturedRequest | None:
    wire = dialect(api)
    client = conversation(api)
    for ex in cap.main_exchanges():
        req = ex.request
        body = req.body
        if req.api != api or not isinstance(body, dict) or not body.get("tools"):
            continue
        if not _is_generation_path(req.path, wire):
            continue
        if client.is_first_request(body):
            return req
    return None


def _offers_namespace(body: dict, namespace: str) -> bool:
    return any(isinstance(t, dict) and t.get("type") == "namespace" and t.get("name") == namespace
               for t in body.get("tools") or [])


def _corpus_files(root: Path | str | None) -> tuple[Path | None, list[Path]]:
    """The corpus folder (`root`, or the bundled captured/; None when there is none) and its
    capture files."""
    try:
        root_path = Path(root) if root is not None else captured_dir()
    except FileNotFoundError:
        return None, []
    return root_path, (list(iter_capture_files(root_path)) if root_path.exists() else [])


def _client_captures(client: str, files: list[Path]):
    """(file, capture) for each readable capture of `client` among `files`, loaded one at a time
    (a file that is not a capture is skipped)."""
    for f in files:
        try:
            cap = load_capture(f)
        except CaptureFormatError:
            continue
        if cap.client == client:
            yield f, cap


def find_template(api: str, root: Path | str | None = None, *, fallback: bool = True,
                  namespace: str | None = None) -> Template:
    """The real client's first tool-bearing request for `api` from the capture corpus.

    Preference: the client that speaks this dialect (Claude Code / opencode / Codex); a request
    offering the client's loop tools (`LOOP_TOOLS`: Codex's freeform apply_patch); then, with
    `namespace`, one offering that namespace tool (an attached MCP server's); case `default`, then
    a `*tool-loop*` case; the newest client version. Falls back to the bundled recording when the corpus has none."""
    if api not in CLIENT_FOR_API:
        raise ValueError(f"api must be one of {sorted(CLIENT_FOR_API)}, got {api!r}")
    client = CLIENT_FOR_API[api]
    candidates = []
    root_path, files = _corpus_files(root)
    for f, cap in _client_captures(client, files):
        req = _first_loop_request(cap, api)
        if req is not None:
            offered = set(offered_tool_names(api, req.body))
            complete = all(t in offered for t in LOOP_TOOLS.get(client, ()))
            has_namespace = namespace is not None and _offers_namespace(req.body, namespace)
            rank = (complete, has_namespace, cap.case == "default", "tool-loop" in cap.case, _version_key(cap.client_version),
                    str(f))
            candidates.append((rank, req, cap, f))
    if candidates:
        candidates.sort(key=lambda c: c[0], reverse=True)
        _, req, cap, f = candidates[0]
        return Template(req, f"{cap.id} ({f})")
    if not fallback:
        raise TemplateError(f"no {client} capture with a first {api} request carrying tools under {root_path}")
    f = TEMPLATES_DIR / f"{client}.json"
    cap = load_capture(f)
    req = _first_loop_request(cap, api)
    if req is None:  # pragma: no cover - bundled data is tested
        raise TemplateError(f"bundled template {f} holds no usable first request")
    return Template(req, f"{cap.id} (bundled fallback {f.name}; captured/ has no {client} first request)")


def find_stored_history(api: str, root: Path | str | None = None) -> tuple[list[dict], str]:
    """A stored session of the client of `api` to resume: the history a later request of a
    captured conversation carries (the one with the most reasoning items carrying
    encrypted_content), and where it came from. Falls back to the bundled recording."""
    client = CLIENT_FOR_API[api]
    talk = conversation(api)
    root_path, files = _corpus_files(root)

    def heaviest(paths: list[Path]) -> tuple[int, list[dict], str] | None:
        best: tuple[int, list[dict], str] | None = None
        for f, cap in _client_captures(client, paths):
            for n, ex in enumerate(cap.main_exchanges(), 1):
                body = ex.request.body
                history = talk.stored_history(body) if isinstance(body, dict) and ex.request.api == api else None
                if history:
                    weight = sum(1 for i in history if i.get("type") == "reasoning" and i.get("encrypted_content"))
                    if best is None or weight > best[0]:
                        best = (weight, history, f"{cap.id}#{n} ({f})")
        return best

    # the bundled recording is only a fallback, read when the corpus has no stored session
    best = heaviest(files) or heaviest([TEMPLATES_DIR / f"{client}.json"])
    if best is None:  # pragma: no cover - bundled data is tested
        raise TemplateError(f"no stored {client} session with reasoning items under {root_path} or {TEMPLATES_DIR}")
    return best[1], best[2]


# ---------------------------------------------------------------------------------- first request
def captured_working_directory(body: dict, api: str | None = None) -> str | None:
    """The working directory the client named in its request (Claude Code's `Primary working
    directory: X`, opencode's `Working directory: X`, Codex's `<cwd>X</cwd>`)."""
    client = conversation(api) if api is not None else Conversation()
    return client.working_directory(body)


def _prompt_slot(body: dict, api: str | None = None) -> tuple[Any, Any]:
    """(container, key) of the user's own prompt text in the first user message."""
    client = conversation(api) if api is not None else Conversation()
    try:
        return client.prompt_slot(body)
    except LookupError as exc:
        raise TemplateError(str(exc)) from None


def build_first_request(template: Template, prompt: str, sandbox_root: Path, model: str | None) -> dict:
    body = copy.deepcopy(template.request.body)
    old_cwd = captured_working_directory(body, template.api)
    if old_cwd:
        encoded = json.dumps(body, ensure_ascii=False)
        old_js, new_js = json.dumps(old_cwd)[1:-1], json.dumps(str(sandbox_root))[1:-1]
        body = json.loads(encoded.replace(old_js, new_js))
    holder, key = _prompt_slot(body, template.api)
    original = holder[key]
    # opencode `run` wraps a prompt containing spaces in literal double quotes (WIRE.md).
    quoted = isinstance(original, str) and len(original) >= 2 and original.startswith('"') and original.rstrip().endswith('"')
    holder[key] = f'"{prompt}"' if quoted else prompt
    if model:
        body["model"] = model
    return body


# ---------------------------------------------------------------------------------- tool calls
@dataclass(frozen=True)
class CheckedCall:
    """One tool call as the wire reads it (`conformance.wire.dialect.ToolCall`) and the loop's
    judgement of it: `problem` says why the client cannot run it (None when it can)."""

    call: ToolCall
    problem: str | None = None

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return _name(self.call)

    @property
    def arguments(self) -> Any:
        return self.call.arguments


def _name(call: ToolCall) -> str:
    """The tool name as text (a target may send a number there; the client reads it as text)."""
    return call.name if isinstance(call.name, str) else str(call.name)


def _call_problem(call: ToolCall, offered: list[str]) -> str | None:
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
    if _name(call) not in offered:
        return f"tool {_name(call)!r} was not offered (offered: {', '.join(offered[:12])}...)"
    return None


def parse_calls(message: dict, api: str, offered: list[str]) -> list[CheckedCall]:
    """The message's tool calls (the Dialect's reader), each with the loop's judgement."""
    return [CheckedCall(call, _call_problem(call, offered)) for call in dialect(api).tool_calls(message)]


def _arguments_seen(message: dict, call: ToolCall) -> str:
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


# ---------------------------------------------------------------------------------- self-check
def check_outgoing(body: dict, api: str, received: dict, turn: int) -> list[Violation]:
    """The driver's own bookkeeping on the request it is about to send as turn `turn`:
    the previous assistant turn came back verbatim and every tool call got exactly one result."""
    out: list[Violation] = []
    client = conversation(api)
    last = client.last_turn(body)
    if last is None:
        return [violation("loop.tool_result_paired", "the request carries no assistant message to answer",
                          expected="the previous assistant turn followed by its tool results", seen="none", turn=turn)]
    sent, after, idx = last
    where = f"/{client.history_key}/{idx}"
    want_ids = [call.id for call in dialect(api).tool_calls(received)]
    for kind in client.kept_kinds:
        want, got = client.kept_blocks(received, kind), client.kept_blocks(sent, kind)
        if want != got:
            out.append(violation(
                "loop.thinking_preserved", f"the {kind} blocks sent back differ from the ones received",
                expected=json.dumps(want)[:300], seen=json.dumps(got)[:300], turn=turn,
                pointer=f"{where}/content" if client.history_key == "messages" else where))
    sent_ids = client.echoed_call_ids(sent)
    if sent_ids is not None and sent_ids != want_ids:
        out.append(violation("loop.tool_result_paired", "the assistant tool_calls sent back differ from the ones received",
                             expected=json.dumps(want_ids), seen=json.dumps(sent_ids), turn=turn,
                             pointer=f"{where}/tool_calls" if client.history_key == "messages" else where))
    wrong_kind = client.mismatched_results(sent, after)
    if wrong_kind:
        out.append(violation("loop.tool_result_paired", f"tool results of the wrong kind for their calls: {wrong_kind}",
                             expected="a custom_tool_call_output for a custom_tool_call, a function_call_output "
                             "for a function_call", seen=json.dumps(wrong_kind)[:300], turn=turn, pointer=where))
    got_ids = client.answered_ids(after)
    missing = [i for i in want_ids if got_ids.count(i) == 0]
    doubled = sorted({i for i in got_ids if got_ids.count(i) > 1})
    unknown = [i for i in got_ids if i not in want_ids]
    if missing or doubled or unknown:
        out.append(violation(
            "loop.tool_result_paired",
            f"tool results do not pair with the tool calls (missing {missing}, repeated {doubled}, unknown {unknown})",
            expected=f"exactly one result for each of {want_ids}", seen=json.dumps(got_ids), turn=turn,
            pointer=f"/{client.history_key}/{idx + 1}"))
    return out


# ---------------------------------------------------------------------------------- the report
@dataclass
class TurnRecord:
    turn: int
    request: dict
    raw: RawExchange | None
    verdict: Any  # ExchangeVerdict
    stop_reason: str | None = None
    calls: list[CheckedCall] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)


@dataclass
class LoopReport(HasViolations):
    scenario: str
    api: str
    client: str
    target: str
    template: str
    rng_seed: int
    values: dict[str, Any]
    sandbox_root: str
    turns: list[TurnRecord] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    ended: str = ""  # final | turn_limit | exchange | driver
    elapsed: float = 0.0

    @property
    def check_ids(self) -> list[str]:
        return sorted({v.check_id for v in self.errors})

    @property
    def failed_turn(self) -> int | None:
        turns = [v.where.turn for v in self.errors if v.where.turn is not None]
        return min(turns) if turns else None

    def title(self) -> str:
        head = f"agent loop {self.scenario} [{self.api}, as {self.client}] against {self.target}"
        if self.passed:
            return f"{head}: completed in {len(self.turns)} turns"
        first = min(self.errors, key=lambda v: (v.where.turn or 10**6))
        at = f"turn {first.where.turn}" if first.where.turn is not None else "the end"
        return f"{head}: broke at {at} ({first.check_id}) after {len(self.turns)} turn(s)"

    def raise_for_failure(self) -> None:
        if self.passed:
            return
        raise ConformanceFailure(
            self.title(), self.violations,
            extra={"template": self.template, "rng seed": str(self.rng_seed), "sandbox": self.sandbox_root,
                   "turns": self.turn_summary()},
            reproduce=[f"pytest --target={self.target} -m loop -k '{self.scenario} and {self.api}'"])

    def turn_summary(self) -> str:
        parts = []
        for t in self.turns:
            calls = ", ".join(c.name for c in t.calls) or "-"
            parts.append(f"#{t.turn} stop={t.stop_reason} calls=[{calls}]")
        return "; ".join(parts)

    def results(self, test_id: str, *, model: str = "", duration_s: float | None = None) -> list[Result]:
        """Result records: every exchange check per turn, then the loop checks."""
        out: list[Result] = []
        common = dict(test_id=test_id, target=self.target, api=self.api, model=model, client="scenario",
                      case=self.scenario)
        for t in self.turns:
            verdict = t.verdict
            if verdict is None:
                continue
            for check_id, outcome in sorted(getattr(verdict, "outcomes", {}).items()):
                vs = [v.to_dict() for v in verdict.violations if v.check_id == check_id]
                out.append(Result(check_id=check_id, outcome=outcome, turn=t.turn,
                                  message=vs[0]["message"] if vs else "", violations=vs, **common))
        loop_ids = ("loop.completion_check", "loop.stop_reason", "loop.turn_limit", "loop.tool_call_wellformed",
                    "loop.tool_result_paired", "loop.thinking_preserved", "loop.exchange_failed")
        for check_id in loop_ids:
            vs = [v for v in self.violations if v.check_id == check_id]
            if vs:
                out.append(Result(check_id=check_id, outcome="failed" if any(v.is_error for v in vs) else "warning",
                                  turn=vs[0].where.turn, message=vs[0].message,
                                  violations=[v.to_dict() for v in vs], **common))
            elif self.ended == "final" or check_id in ("loop.tool_result_paired", "loop.thinking_preserved",
                                                       "loop.tool_call_wellformed"):
                out.append(Result(check_id=check_id, outcome="passed", **common))
        out.append(Result(check_id="loop.completed", outcome="passed" if self.passed else "failed",
                          turn=self.failed_turn, message=self.title(),
                          violations=[v.to_dict() for v in self.errors], duration_s=duration_s,
                          details={"turns": len(self.turns), "rng_seed": self.rng_seed, "template": self.template,
                                   "summary": self.turn_summary()}, **common))
        return out


# ---------------------------------------------------------------------------------- the driver
class LoopDriver:
    """Runs one scenario against a target in one dialect. Subclass hooks (`echo_assistant`,
    `result_messages`, `run_call`) exist so the self-tests can prove a broken driver fails."""

    def __init__(self, target: str, api: str, *, model: str | None = None, expect_model: str | None = None,
                 api_key: str | None = None, deadlines: Deadlines | None = None, template: Template | None = None,
                 captured_root: Path | str | None = None, workdir: Path | str | None = None,
                 keep_sandbox: bool = False, sender=None, salt_token: str | None = None) -> None:
        if api not in CLIENT_FOR_API:
            raise ValueError(f"api must be one of {sorted(CLIENT_FOR_API)}, got {api!r}")
        self.target = target
        self.api = api
        self.dialect = dialect(api)
        self.conversation = conversation(api)  # how self.client continues the conversation
        self.client = CLIENT_FOR_API[api]
        self.model = model
        self.expect_model = expect_model if expect_model is not None else model
        self.api_key = api_key or "sk-conformance"
        self.deadlines = deadlines or Deadlines(connect=10, first_content=60, total=180)
        self.captured_root = captured_root
        self.template_given = template is not None
        self.template = template or find_template(api, captured_root)
        self._in_use = self.template  # the template of the run under way (a scenario may need another)
        self.workdir = Path(workdir) if workdir else None
        self.keep_sandbox = keep_sandbox
        # sender(captured_request, body_bytes) -> RawExchange; default: the transport with deadlines.
        # The suite passes its session's sender so a dead target is noticed once for the whole run.
        self.sender = sender
        self.salt_token = salt_token  # --conformance-salt: a run token at the start of the system prompt
        self._message: Any = None  # the accumulated message whose calls are being answered

    # ----- hooks (overridden only by self-tests)
    def echo_assistant(self, message: dict) -> dict:
        return self.conversation.echo_assistant(message)

    def result_messages(self, calls: list[CheckedCall], outcomes: list[ToolOutcome]) -> list[dict]:
        return self.conversation.results_for(self._message, [c.id for c in calls], outcomes)

    def run_call(self, sandbox: Sandbox, call: CheckedCall) -> ToolOutcome:
        if call.problem:
            return sandbox._error(f"The arguments provided to the tool are invalid: {call.problem}")
        # a freeform (custom) tool's input is its raw text, never JSON
        args = {"input": call.call.raw} if call.call.kind == "custom" else call.arguments
        return sandbox.run(call.name, args, namespace=call.call.namespace)

    # ----- mechanics
    def _cache_control(self) -> dict:
        body = self._in_use.request.body
        if not self.conversation.moves_cache_breakpoint:
            return {}
        holder, key = _prompt_slot(body, self.api)
        if isinstance(holder, dict) and key == "text" and isinstance(holder.get("cache_control"), dict):
            return dict(holder["cache_control"])
        return {"type": "ephemeral"}

    def _move_cache_control(self, body: dict, cc: dict) -> None:
        """Claude Code keeps one message-level cache breakpoint: on the last block of the last message."""
        had = False
        for m in body.get("messages") or []:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and "cache_control" in b:
                        had = True
                        del b["cache_control"]
        last = body["messages"][-1]
        if had and isinstance(last.get("content"), list) and last["content"]:
            last["content"][-1]["cache_control"] = cc

    def _send(self, body: dict) -> RawExchange:
        from conformance.net.client import serialize
        from conformance.net.target import Target

        req = self._in_use.request
        if self.sender is not None:
            return self.sender(req, serialize(body))
        # One client per turn (each turn runs on its own event loop) on the process's one TLS context.
        return Target(self.target, self.api_key, self.deadlines).send_sync(
            self.dialect, req.path, serialize(body), query=req.query, captured_headers=req.headers)

    def run(self, scenario: Scenario, *, rng_seed: int | None = None, max_turns: int | None = None) -> LoopReport:
        from conformance.checks.exchange import check_exchange

        rng_seed = rng_seed if rng_seed is not None else secrets.randbits(32)
        values = scenario.draw(random.Random(rng_seed))
        template = self.template
        namespace = self.conversation.mcp_namespace(scenario.mcp_server) if scenario.mcp_server else None
        if namespace and not self.template_given and not _offers_namespace(template.request.body, namespace):
            # the client's own capture with the server attached, when the corpus has one
            found = find_template(self.api, self.captured_root, namespace=namespace)
            if _offers_namespace(found.request.body, namespace):
                template = found
        self._in_use = template
        root = Path(tempfile.mkdtemp(prefix=f"loop-{scenario.id}-", dir=self.workdir))
        sandbox = Sandbox(root, self.client)
        sandbox.seed(scenario.seed_files(values))
        limit = max_turns or scenario.max_turns
        report = LoopReport(scenario.id, self.api, self.client, self.target, template.source, rng_seed,
                            values, str(sandbox.root))
        start = time.monotonic()
        try:
            body = build_first_request(template, scenario.prompt, sandbox.root, self.model)
            if self.salt_token:
                from conformance.net.client import salted

                body = salted(body, self.dialect, self.salt_token)
            if scenario.mcp_server:
                self.conversation.attach_mcp_server(body, scenario.mcp_server)  # unless the capture has it
            if scenario.resume:
                history, source = find_stored_history(self.api, self.captured_root)
                self.conversation.resume(body, history)
                report.template += f"; resumed session {source}"
            offered = offered_tool_names(self.api, body)
            cache_control = self._cache_control()
            forced = False
            original_choice = body.get("tool_choice")
            if scenario.tool_choice_required:
                # the wire's "any tool" choice; on the Anthropic wire thinking goes off for the whole
                # loop (see conformance.loop.conversation)
                self.conversation.force_tool_call(body)
                forced = True
            received: dict | None = None
            for turn in range(1, limit + 1):
                if received is not None:
                    own = check_outgoing(body, self.api, received, turn)
                    if own:
                        report.violations.extend(own)
                        report.ended = "driver"
                        break
                raw = self._send(body)
                verdict = check_exchange(raw, body, wire=self.api, expect_model=self.expect_model, turn=turn)
                record = TurnRecord(turn, body, raw, verdict)
                report.turns.append(record)
                message = verdict.message
                if isinstance(message, dict):
                    record.stop_reason = self.dialect.stop_reason(message)
                    record.calls = parse_calls(message, self.api, offered)
                if verdict.errors or not isinstance(message, dict):
                    report.violations.extend(verdict.violations)
                    if not verdict.errors:
                        report.violations.append(violation(
                            "loop.exchange_failed", "the turn produced no assistant message",
                            expected="an accumulated assistant message", seen=raw.error or f"HTTP {raw.status}",
                            turn=turn))
                    report.ended = "exchange"
                    break
                report.violations.extend(v for v in verdict.violations if not v.is_error)
                stop = record.stop_reason
                calls = record.calls
                # the judge decided the last call was cut by the cap (tools.call_cut): the client cannot
                # run it, but it is the stop reason's doing, not a malformed call
                cut_call = calls[-1] if calls and any(
                    x.check_id == tool_checks.CALL_CUT for x in verdict.violations) else None
                bad = [c for c in calls if c.problem and c is not cut_call]
                for c in bad:
                    report.violations.append(violation(
                        "loop.tool_call_wellformed", f"tool call {c.id or '?'} ({c.name or '?'}) is not well-formed: {c.problem}",
                        expected="an id, an offered tool name and a JSON object of arguments",
                        seen=_arguments_seen(message, c.call)[:300], turn=turn))
                if bad:
                    report.ended = "exchange"
                    break
                if cut_call is not None:
                    report.violations.append(violation(
                        "loop.stop_reason", f"the turn was {self.dialect.describe_cut(stop)} inside tool call "
                        f"{len(calls)} ({cut_call.name or '?'})", seen=repr(stop), turn=turn,
                        expected="the call completed within the output cap, then "
                        + " or ".join(self.dialect.stops.tool)))
                    report.ended = "exchange"
                    break
                stops = self.dialect.stops
                if not calls:
                    if stop not in stops.final:
                        report.violations.append(violation(
                            "loop.stop_reason", f"the final assistant turn ended with {stop!r}",
                            expected=" or ".join(stops.final), seen=repr(stop), turn=turn))
                    report.ended = "final"
                    break
                # a turn forced to call a tool may end with one of the wire's forced_tool stops too
                if stop not in stops.tool and not (forced and stop in stops.forced_tool):
                    report.violations.append(violation(
                        "loop.stop_reason", f"the turn called {len(calls)} tool(s) but ended with {stop!r}",
                        expected=" or ".join(stops.tool), seen=repr(stop), turn=turn))
                    report.ended = "exchange"
                    break
                record.outcomes = [self.run_call(sandbox, c) for c in calls]
                received = copy.deepcopy(message)
                body = copy.deepcopy(body)
                if forced:  # forcing is for turn 1 only: back to what the client sends
                    if original_choice is None:
                        body.pop("tool_choice", None)
                    else:
                        body["tool_choice"] = original_choice
                    forced = False
                self._message = message
                self.conversation.append_turn(body, self.echo_assistant(message),
                                              self.result_messages(calls, record.outcomes))
                if self.conversation.moves_cache_breakpoint:
                    self._move_cache_control(body, cache_control)
            else:
                report.ended = "turn_limit"
                report.violations.append(violation(
                    "loop.turn_limit", f"the loop was still calling tools after {limit} turns",
                    expected=f"a final answer within {limit} turns", seen=report.turn_summary()[-300:], turn=limit))
            if report.ended in ("final", "turn_limit"):
                last_turn = report.turns[-1].turn if report.turns else None
                for f in check_completion(scenario, values, sandbox.read_text):
                    report.violations.append(violation(
                        "loop.completion_check", f"{f.file}: the completion check `{f.rule}` does not hold",
                        expected=f.expected, seen=f.seen, turn=last_turn))
        finally:
            report.elapsed = time.monotonic() - start
            if not self.keep_sandbox and report.passed:
                shutil.rmtree(root, ignore_errors=True)
        return report


def scenario_runs_on(scenario: Scenario, api: str) -> bool:
    """Whether the client of `api` can run `scenario` (an attached MCP server needs a client that
    offers its tools in a namespace; a resumed session, one that resends the stored history)."""
    client = conversation(api)
    return (not scenario.mcp_server or scenario.mcp_server in client.mcp_servers) and (
        not scenario.resume or client.resumes_sessions)


def run_scenario(target: str, api: str, scenario: Scenario, **kwargs) -> LoopReport:
    """One call: build a driver and run the scenario (kwargs: LoopDriver's, plus rng_seed)."""
    rng_seed = kwargs.pop("rng_seed", None)
    return LoopDriver(target, api, **kwargs).run(scenario, rng_seed=rng_seed)
