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
- Tool calls are parsed from the accumulated message, run in the sandbox, and appended exactly
  as the client does (measured on Claude Code 2.1.197 and opencode 1.18.33, see docs/loop.md):
  Anthropic — the assistant message with its content blocks verbatim (thinking + signature,
  text, tool_use), then one user message of tool_result blocks (`is_error: true` on errors),
  cache_control removed from earlier message blocks and put on the last block; OpenAI — the
  assistant message with `content: ""` (or the text) and `tool_calls`, then one `role: tool`
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
from conformance.capture.format import (
    Capture,
    CapturedRequest,
    CaptureFormatError,
    iter_capture_files,
    load_capture,
)
from conformance.checks import tools as tool_checks
from conformance.core.failures import HasViolations, Violation
from conformance.core.paths import captured_dir
from conformance.core.registry import violation
from conformance.core.results import Result
from conformance.loop.sandbox import Sandbox, ToolOutcome
from conformance.loop.scenarios import Scenario, check_completion
from conformance.loop.tools import CLIENT_FOR_API, offered_tool_names
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.text import ConformanceFailure

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
_CWD_RX = re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE)
FINAL_STOPS = {"anthropic": ("end_turn",), "openai": ("stop",)}
TOOL_STOPS = {"anthropic": ("tool_use",), "openai": ("tool_calls",)}


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


def _first_loop_request(cap: Capture, api: str) -> CapturedRequest | None:
    for ex in cap.main_exchanges():
        req = ex.request
        body = req.body
        if req.api != api or not isinstance(body, dict) or not body.get("tools"):
            continue
        if api == "openai" and not req.path.rstrip("/").endswith("/chat/completions"):
            continue
        if api == "anthropic" and not req.path.rstrip("/").endswith("/messages"):
            continue
        msgs = body.get("messages") or []
        if any(isinstance(m, dict) and m.get("role") in ("assistant", "tool") for m in msgs):
            continue
        if not any(isinstance(m, dict) and m.get("role") == "user" for m in msgs):
            continue
        return req
    return None


def find_template(api: str, root: Path | str | None = None, *, fallback: bool = True) -> Template:
    """The real client's first tool-bearing request for `api` from the capture corpus.

    Preference: the client that speaks this dialect (Claude Code / opencode); case `default`, then a
    `*tool-loop*` case; the newest client version. Falls back to the bundled recording when the corpus has none."""
    if api not in CLIENT_FOR_API:
        raise ValueError(f"api must be one of {sorted(CLIENT_FOR_API)}, got {api!r}")
    client = CLIENT_FOR_API[api]
    candidates = []
    try:
        root_path = Path(root) if root is not None else captured_dir()
    except FileNotFoundError:
        root_path = None
    if root_path is not None and root_path.exists():
        for f in iter_capture_files(root_path):
            try:
                cap = load_capture(f)
            except CaptureFormatError:
                continue
            if cap.client != client:
                continue
            req = _first_loop_request(cap, api)
            if req is not None:
                rank = (cap.case == "default", "tool-loop" in cap.case, _version_key(cap.client_version), str(f))
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


# ---------------------------------------------------------------------------------- first request
def captured_working_directory(body: dict) -> str | None:
    """The working directory the client named in its system text (Claude Code's `Primary working
    directory: X`, opencode's `Working directory: X`)."""
    texts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts.extend(b.get("text", "") for b in system if isinstance(b, dict))
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "system":
            c = m.get("content")
            texts.append(c if isinstance(c, str) else json.dumps(c))
    for t in texts:
        m = _CWD_RX.search(t)
        if m:
            return m.group(1).rstrip(".,;")
    return None


def _prompt_slot(body: dict) -> tuple[Any, Any]:
    """(container, key) of the user's own prompt text in the first user message."""
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return m, "content"
        if isinstance(content, list):
            texts = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
            own = [b for b in texts if not b.get("text", "").lstrip().startswith("<system-reminder>")]
            if own or texts:
                return (own or texts)[-1], "text"
        break
    raise TemplateError("the template's first user message has no text to replace")


def build_first_request(template: Template, prompt: str, sandbox_root: Path, model: str | None) -> dict:
    body = copy.deepcopy(template.request.body)
    old_cwd = captured_working_directory(body)
    if old_cwd:
        encoded = json.dumps(body, ensure_ascii=False)
        old_js, new_js = json.dumps(old_cwd)[1:-1], json.dumps(str(sandbox_root))[1:-1]
        body = json.loads(encoded.replace(old_js, new_js))
    holder, key = _prompt_slot(body)
    original = holder[key]
    # opencode `run` wraps a prompt containing spaces in literal double quotes (WIRE.md).
    quoted = isinstance(original, str) and len(original) >= 2 and original.startswith('"') and original.rstrip().endswith('"')
    holder[key] = f'"{prompt}"' if quoted else prompt
    if model:
        body["model"] = model
    return body


# ---------------------------------------------------------------------------------- tool calls
@dataclass
class ToolCall:
    id: str
    name: str
    args: Any  # parsed arguments (dict when well-formed)
    raw_args: str | None = None  # OpenAI: the arguments string as received
    problem: str | None = None  # why the call is not well-formed


def parse_calls(message: dict, api: str, offered: list[str]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    if api == "anthropic":
        for b in message.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                calls.append(ToolCall(str(b.get("id") or ""), str(b.get("name") or ""), b.get("input")))
    else:
        for tc in message.get("tool_calls") or []:
            fn = (tc or {}).get("function") or {}
            raw = fn.get("arguments")
            args: Any = None
            problem = None
            if isinstance(raw, str):
                try:
                    args = json.loads(raw) if raw.strip() else {}
                except json.JSONDecodeError as exc:
                    problem = f"arguments are not JSON ({exc.msg} at char {exc.pos})"
            else:
                problem = f"arguments are a {type(raw).__name__}, not a JSON string"
            calls.append(ToolCall(str((tc or {}).get("id") or ""), str(fn.get("name") or ""), args,
                                  raw if isinstance(raw, str) else json.dumps(raw), problem))
    for c in calls:
        if c.problem:
            continue
        if not c.id:
            c.problem = "the call has no id"
        elif not c.name:
            c.problem = "the call has no tool name"
        elif c.name not in offered:
            c.problem = f"tool {c.name!r} was not offered (offered: {', '.join(offered[:12])}...)"
        elif not isinstance(c.args, dict):
            c.problem = f"arguments are a {type(c.args).__name__}, not a JSON object"
    return calls


# ---------------------------------------------------------------------------------- self-check
def check_outgoing(body: dict, api: str, received: dict, turn: int) -> list[Violation]:
    """The driver's own bookkeeping on the request it is about to send as turn `turn`:
    the previous assistant turn came back verbatim and every tool call got exactly one result."""
    out: list[Violation] = []
    msgs = body.get("messages") or []
    idx = max((i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"), default=None)
    if idx is None:
        return [violation("loop.tool_result_paired", "the request carries no assistant message to answer",
                          expected="the previous assistant turn followed by its tool results", seen="none", turn=turn)]
    sent = msgs[idx]
    after = msgs[idx + 1:]
    if api == "anthropic":
        want_ids = [b.get("id") for b in received.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
        got_blocks = sent.get("content") if isinstance(sent.get("content"), list) else []
        for kind in ("thinking", "redacted_thinking"):
            want = [b for b in received.get("content") or [] if isinstance(b, dict) and b.get("type") == kind]
            got = [b for b in got_blocks if isinstance(b, dict) and b.get("type") == kind]
            if want != got:
                out.append(violation(
                    "loop.thinking_preserved", f"the {kind} blocks sent back differ from the ones received",
                    expected=json.dumps(want)[:300], seen=json.dumps(got)[:300], turn=turn,
                    pointer=f"/messages/{idx}/content"))
        results = [b for m in after if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        got_ids = [b.get("tool_use_id") for b in results]
    else:
        want_ids = [tc.get("id") for tc in received.get("tool_calls") or []]
        sent_ids = [tc.get("id") for tc in sent.get("tool_calls") or []]
        if sent_ids != want_ids:
            out.append(violation("loop.tool_result_paired", "the assistant tool_calls sent back differ from the ones received",
                                 expected=json.dumps(want_ids), seen=json.dumps(sent_ids), turn=turn,
                                 pointer=f"/messages/{idx}/tool_calls"))
        got_ids = [m.get("tool_call_id") for m in after if isinstance(m, dict) and m.get("role") == "tool"]
    missing = [i for i in want_ids if got_ids.count(i) == 0]
    doubled = sorted({i for i in got_ids if got_ids.count(i) > 1})
    unknown = [i for i in got_ids if i not in want_ids]
    if missing or doubled or unknown:
        out.append(violation(
            "loop.tool_result_paired",
            f"tool results do not pair with the tool calls (missing {missing}, repeated {doubled}, unknown {unknown})",
            expected=f"exactly one result for each of {want_ids}", seen=json.dumps(got_ids), turn=turn,
            pointer=f"/messages/{idx + 1}"))
    return out


# ---------------------------------------------------------------------------------- the report
@dataclass
class TurnRecord:
    turn: int
    request: dict
    raw: RawExchange | None
    verdict: Any  # ExchangeVerdict
    stop_reason: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
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
        self.client = CLIENT_FOR_API[api]
        self.model = model
        self.expect_model = expect_model if expect_model is not None else model
        self.api_key = api_key or "sk-conformance"
        self.deadlines = deadlines or Deadlines(connect=10, first_content=60, total=180)
        self.template = template or find_template(api, captured_root)
        self.workdir = Path(workdir) if workdir else None
        self.keep_sandbox = keep_sandbox
        # sender(captured_request, body_bytes) -> RawExchange; default: the transport with deadlines.
        # The suite passes its session's sender so a dead target is noticed once for the whole run.
        self.sender = sender
        self.salt_token = salt_token  # --conformance-salt: a run token at the start of the system prompt

    # ----- hooks (overridden only by self-tests)
    def echo_assistant(self, message: dict) -> dict:
        if self.api == "anthropic":
            return {"role": "assistant", "content": copy.deepcopy(message.get("content") or [])}
        out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [{"id": tc.get("id"), "type": "function",
                                  "function": {"name": (tc.get("function") or {}).get("name"),
                                               "arguments": (tc.get("function") or {}).get("arguments")}}
                                 for tc in calls]
        return out

    def result_messages(self, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> list[dict]:
        if self.api == "anthropic":
            blocks = []
            for c, o in zip(calls, outcomes, strict=True):
                if o.is_error:
                    blocks.append({"type": "tool_result", "content": o.text, "is_error": True, "tool_use_id": c.id})
                elif o.explicit_ok:
                    blocks.append({"tool_use_id": c.id, "type": "tool_result", "content": o.text, "is_error": False})
                else:
                    blocks.append({"tool_use_id": c.id, "type": "tool_result", "content": o.text})
            return [{"role": "user", "content": blocks}]
        return [{"role": "tool", "tool_call_id": c.id, "content": o.text} for c, o in zip(calls, outcomes, strict=True)]

    def run_call(self, sandbox: Sandbox, call: ToolCall) -> ToolOutcome:
        if call.problem:
            return sandbox._error(f"The arguments provided to the tool are invalid: {call.problem}")
        return sandbox.run(call.name, call.args)

    # ----- mechanics
    def _cache_control(self) -> dict:
        body = self.template.request.body
        holder, key = _prompt_slot(body)
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

        req = self.template.request
        if self.sender is not None:
            return self.sender(req, serialize(body))
        # One client per turn (each turn runs on its own event loop) on the process's one TLS context.
        return Target(self.target, self.api_key, self.deadlines).send_sync(
            self.api, req.path, serialize(body), query=req.query, captured_headers=req.headers)

    def run(self, scenario: Scenario, *, rng_seed: int | None = None, max_turns: int | None = None) -> LoopReport:
        from conformance.checks.exchange import check_exchange

        rng_seed = rng_seed if rng_seed is not None else secrets.randbits(32)
        values = scenario.draw(random.Random(rng_seed))
        root = Path(tempfile.mkdtemp(prefix=f"loop-{scenario.id}-", dir=self.workdir))
        sandbox = Sandbox(root, self.client)
        sandbox.seed(scenario.seed_files(values))
        limit = max_turns or scenario.max_turns
        report = LoopReport(scenario.id, self.api, self.client, self.target, self.template.source, rng_seed,
                            values, str(sandbox.root))
        start = time.monotonic()
        try:
            body = build_first_request(self.template, scenario.prompt, sandbox.root, self.model)
            if self.salt_token:
                from conformance.net.client import salted

                body = salted(body, self.api, self.salt_token)
            offered = offered_tool_names(self.api, body)
            cache_control = self._cache_control()
            forced = False
            original_choice = body.get("tool_choice")
            if scenario.tool_choice_required:
                body["tool_choice"] = {"type": "any"} if self.api == "anthropic" else "required"
                forced = True
                if self.api == "anthropic" and (body.get("thinking") or {}).get("type") not in (None, "disabled"):
                    # The Messages API refuses a forced tool_choice with thinking on, and a later turn
                    # may not switch thinking back on; so the whole loop runs as Claude Code does with
                    # MAX_THINKING_TOKENS=0: thinking disabled, no context_management (WIRE.md).
                    body["thinking"] = {"type": "disabled"}
                    body.pop("context_management", None)
            received: dict | None = None
            for turn in range(1, limit + 1):
                if received is not None:
                    own = check_outgoing(body, self.api, received, turn)
                    if own:
                        report.violations.extend(own)
                        report.ended = "driver"
                        break
                raw = self._send(body)
                verdict = check_exchange(raw, body, api=self.api, expect_model=self.expect_model, turn=turn)
                record = TurnRecord(turn, body, raw, verdict)
                report.turns.append(record)
                message = verdict.message
                if isinstance(message, dict):
                    record.stop_reason = tool_checks.stop_reason_of(message, self.api)
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
                        seen=(c.raw_args if c.raw_args is not None else json.dumps(c.args))[:300], turn=turn))
                if bad:
                    report.ended = "exchange"
                    break
                if cut_call is not None:
                    report.violations.append(violation(
                        "loop.stop_reason", f"the turn was {tool_checks.describe_cut(stop, self.api)} inside tool call "
                        f"{len(calls)} ({cut_call.name or '?'})", seen=repr(stop), turn=turn,
                        expected="the call completed within the output cap, then "
                        + " or ".join(TOOL_STOPS[self.api])))
                    report.ended = "exchange"
                    break
                if not calls:
                    if stop not in FINAL_STOPS[self.api]:
                        report.violations.append(violation(
                            "loop.stop_reason", f"the final assistant turn ended with {stop!r}",
                            expected=" or ".join(FINAL_STOPS[self.api]), seen=repr(stop), turn=turn))
                    report.ended = "final"
                    break
                if stop not in TOOL_STOPS[self.api] and not (forced and self.api == "openai" and stop == "stop"):
                    report.violations.append(violation(
                        "loop.stop_reason", f"the turn called {len(calls)} tool(s) but ended with {stop!r}",
                        expected=" or ".join(TOOL_STOPS[self.api]), seen=repr(stop), turn=turn))
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
                body["messages"].append(self.echo_assistant(message))
                body["messages"].extend(self.result_messages(calls, record.outcomes))
                if self.api == "anthropic":
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


def run_scenario(target: str, api: str, scenario: Scenario, **kwargs) -> LoopReport:
    """One call: build a driver and run the scenario (kwargs: LoopDriver's, plus rng_seed)."""
    rng_seed = kwargs.pop("rng_seed", None)
    return LoopDriver(target, api, **kwargs).run(scenario, rng_seed=rng_seed)
