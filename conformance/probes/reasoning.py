"""Reasoning and output caps: thinking as the clients send it must leave room for the answer.

Rules:
- Cases are sent as the clients send them (docs/wire-facts.md), in the fields the wire's Dialect writes
  (`Dialect.reasoning_variants`): Anthropic `thinking {type: adaptive}` with `output_config.effort`
  at each level (low, medium, high, xhigh, max), `thinking {type: enabled, budget_tokens}` (Claude
  Code for haiku-class models, opencode's title request); OpenAI chat `reasoning_effort` low /
  medium / high; Responses `reasoning.effort`; then no thinking at all (the plain output-cap case).
- The question has a verifiable answer (a passphrase stated in the prompt, the needle convention
  of docs/engine.md) long enough that a low output cap cuts it.
- A max_tokens stop is always reported as "truncated by the output cap (N tokens)", never as a
  wrong answer:
  - the target stopped below the max_tokens the client asked for (usage.output_tokens < max_tokens):
    the target imposes its own cap -> `reasoning.output_cap`;
  - the whole budget went to thinking and no answer text arrived -> `reasoning.answer_before_cap`;
  - an answer was cut at the client's own max_tokens -> `reasoning.output_cap`.
- An exchange that fails outright (refused, hung, malformed) fails `reasoning.answer_before_cap`
  ("no answer") and carries the exchange's own violations (e.g. suite.deadline.total).
- A complete answer without the passphrase is a model metric: `reasoning.answer_correct` (warning).
- Check ids are the constants of `conformance.checks.reasoning`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from conformance.checks.exchange import check_exchange
from conformance.checks.reasoning import ANSWER_BEFORE_CAP, ANSWER_CORRECT, OUTPUT_CAP
from conformance.core import registry
from conformance.core.failures import Violation
from conformance.core.verdict import outcome_of
from conformance.probes.common import (
    ProbeOutcome,
    Target,
    answer_text,
    build_request,
    describe_exchange,
    error_message,
    output_tokens,
    send,
    stop_reason,
    target_gone,
    thinking_text,
)
from conformance.probes.haystack import PHRASE_WORDS
from conformance.wire.dialect import Dialect

MAX_TOKENS = 8192
SYSTEM = "You answer questions about the text the user gives you."


@dataclass(frozen=True)
class ThinkingCase:
    name: str
    fields: dict[str, Any]
    max_tokens: int
    thinking: bool = True


def default_cases(wire: Dialect, max_tokens: int = MAX_TOKENS, budget_tokens: int | None = None) -> list[ThinkingCase]:
    """The wire's reasoning variants at `max_tokens`, then no thinking. A fixed thinking budget
    (default: half of max_tokens, at least 1024) must stay below max_tokens."""
    budget = budget_tokens or max(1024, max_tokens // 2)
    cases = []
    for name, fields in wire.reasoning_variants(budget):
        if wire.thinking_budget(fields) is not None and budget >= max_tokens:
            raise ValueError(f"budget_tokens ({budget}) must be below max_tokens ({max_tokens})")
        cases.append(ThinkingCase(name, fields, max_tokens))
    cases.append(ThinkingCase("no-thinking", {}, max_tokens, thinking=False))
    return cases


def long_phrase(key: str) -> str:
    """A passphrase of several words and numbers (tens of tokens on any tokenizer)."""
    rng = random.Random(f"reasoning:{key}")
    parts = []
    for _ in range(6):
        parts.append(rng.choice(PHRASE_WORDS))
        parts.append(str(rng.randint(1000, 9999)))
    return "-".join(parts)


def question(phrase: str) -> str:
    return (f"The secret passphrase is {phrase}. Think about it if you need to, then answer: "
            "What is the secret passphrase? Answer with the passphrase only.")


@dataclass
class CaseResult:
    case: ThinkingCase
    status: int | None
    stop: str | None
    output_tokens: int | None
    answer: str
    thinking_chars: int
    phrase: str
    elapsed: float
    failure: str | None = None  # exchange-level failure
    violations: list[Violation] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.phrase.lower() in self.answer.lower()

    def row(self) -> dict[str, Any]:
        return {"case": self.case.name, "max_tokens": self.case.max_tokens, "status": self.status, "stop": self.stop,
                "output_tokens": self.output_tokens, "answer_chars": len(self.answer),
                "thinking_chars": self.thinking_chars, "correct": self.correct, "elapsed_s": round(self.elapsed, 3),
                "failure": self.failure}


async def run_case(target: Target, case: ThinkingCase) -> CaseResult:
    phrase = long_phrase(case.name)
    body = build_request(target, question(phrase), max_tokens=case.max_tokens, system=SYSTEM, extra=case.fields)
    raw = await send(target, body)
    judged = check_exchange(raw, body, wire=target.wire)
    res = CaseResult(case, raw.status, None, None, "", 0, phrase, raw.elapsed,
                     violations=[v.at(exchange=case.name) for v in judged.violations])
    if not raw.ok or judged.errors:
        res.failure = describe_exchange(raw) if not raw.ok else "; ".join(sorted({v.check_id for v in judged.errors}))
        if not raw.ok and raw.body():
            res.failure += f": {error_message(raw)[:200]}"
    msg = judged.message
    res.stop = stop_reason(msg, target.wire)
    res.output_tokens = output_tokens(msg, target.wire)
    res.answer = answer_text(msg, target.wire)
    res.thinking_chars = len(thinking_text(msg, target.wire))
    return res


def verdicts(results: list[CaseResult]) -> list[ProbeOutcome]:
    """Fold the case results into the three reasoning verdicts."""
    rows = [r.row() for r in results]
    before_cap: list[Violation] = []
    cap: list[Violation] = []
    wrong: list[Violation] = []
    for r in results:
        where = {"exchange": r.case.name}
        if r.failure and r.stop is None:
            before_cap.append(registry.violation(
                ANSWER_BEFORE_CAP, f"{r.case.name}: no answer: {r.failure}",
                expected="an answer with stop_reason end_turn", seen=r.failure, **where))
            before_cap.extend(v for v in r.violations if v.is_error)
            continue
        if r.stop == "max_tokens":
            n = r.output_tokens if r.output_tokens is not None else r.case.max_tokens
            truncated = f"truncated by the output cap ({n} tokens)"
            if r.output_tokens is not None and r.output_tokens < r.case.max_tokens * 0.95:
                cap.append(registry.violation(
                    OUTPUT_CAP,
                    f"{r.case.name}: {truncated}, below the max_tokens {r.case.max_tokens} the client asked for: "
                    "the target imposes its own output cap",
                    expected=f"up to {r.case.max_tokens} output tokens, an answer, stop_reason end_turn",
                    seen=f"stop_reason max_tokens after {n} tokens; answer {r.answer[:80]!r}", **where))
            elif not r.answer.strip() and r.thinking_chars:
                before_cap.append(registry.violation(
                    ANSWER_BEFORE_CAP,
                    f"{r.case.name}: {truncated}: reasoning used the whole budget and no answer arrived",
                    expected=f"the answer within max_tokens {r.case.max_tokens}",
                    seen=f"{r.thinking_chars} characters of thinking, no text, stop_reason max_tokens", **where))
            else:
                cap.append(registry.violation(
                    OUTPUT_CAP, f"{r.case.name}: answer {truncated}",
                    expected="a complete answer with stop_reason end_turn",
                    seen=f"stop_reason max_tokens; answer {r.answer[:80]!r}", **where))
            continue
        if not r.answer.strip():
            before_cap.append(registry.violation(
                ANSWER_BEFORE_CAP, f"{r.case.name}: the response ended ({r.stop}) without answer text",
                expected="answer text", seen=f"stop_reason {r.stop}, {r.thinking_chars} characters of thinking", **where))
            continue
        if r.stop == "end_turn" and not r.correct:
            wrong.append(registry.violation(
                ANSWER_CORRECT, f"{r.case.name}: the answer does not contain the passphrase",
                expected=r.phrase, seen=r.answer[:200], **where))
    figures = {"cases": rows}
    names = ", ".join(r.case.name for r in results)
    out = []
    if not any(r.stop is not None for r in results):  # nothing answered: only answer_before_cap can tell
        why = "no case got an answer (see reasoning.answer_before_cap)"
        return [ProbeOutcome(ANSWER_BEFORE_CAP, "failed", before_cap[0].message, before_cap, figures),
                ProbeOutcome(OUTPUT_CAP, "unverifiable", why, [], figures),
                ProbeOutcome(ANSWER_CORRECT, "unverifiable", why, [], figures)]
    for check_id, vs, ok_msg in (
        (ANSWER_BEFORE_CAP, before_cap, f"the answer arrived before max_tokens in every case ({names})"),
        (OUTPUT_CAP, cap, "no answer was cut by an output cap"),
    ):
        if vs:
            first = next(v for v in vs if v.check_id == check_id)
            n = sum(1 for v in vs if v.check_id == check_id)
            out.append(ProbeOutcome(check_id, outcome_of(vs), f"{first.message}" + (f" (and {n - 1} more)" if n > 1 else ""),
                                    vs, figures))
        else:
            out.append(ProbeOutcome(check_id, "passed", ok_msg, [], figures))
    out.append(ProbeOutcome(ANSWER_CORRECT, outcome_of(wrong),
                            wrong[0].message if wrong else "every complete answer held the passphrase", wrong, figures))
    return out


async def reasoning_probe(target: Target, cases: list[ThinkingCase] | None = None, *,
                          max_tokens: int = MAX_TOKENS) -> list[ProbeOutcome]:
    results = []
    for case in cases or default_cases(target.wire, max_tokens):
        res = await run_case(target, case)
        results.append(res)
        if res.failure and res.stop is None:
            gone = await target_gone(target)
            out = verdicts(results)
            if gone:
                for o in out:
                    o.details["target_gone"] = gone
            return out  # fail fast: no answer at all (refused, hung, gone); the next case would cost the same
    return verdicts(results)
