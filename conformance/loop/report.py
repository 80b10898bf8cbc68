"""What one agent loop did: every turn's request, exchange, calls and tool results, and how it ended.

Rules:
- A `LoopReport` holds the violations of every turn's exchange and of the loop checks
  (`conformance.checks.loop`); it passes when none is an error. `title()` names the turn that
  broke first and its check; `raise_for_failure()` raises a ConformanceFailure saying so, with
  the template, the rng seed, the sandbox and the turns.
- `results()` are the records of the run: every exchange check per turn, then each loop check
  in registry order (`checks_for("loop")`, outcomes by `loop_outcome`), then `loop.completed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.checks.loop import CheckedCall, loop_outcome
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import checks_for
from conformance.core.results import Result
from conformance.loop.voices import ToolOutcome
from conformance.net.transport import RawExchange
from conformance.report.reproduce import command_line
from conformance.report.text import ConformanceFailure
from conformance.wire.dialect import Dialect


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
    wire: Dialect
    client: str  # the client the loop ran as (the template's)
    target: str
    template: str
    rng_seed: int
    values: dict[str, Any]
    sandbox_root: str  # removed when the loop ends unless the driver keeps it
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
        head = f"agent loop {self.scenario} [{self.wire.name}, as {self.client}] against {self.target}"
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
            reproduce=[command_line(["pytest", f"--target={self.target}", "-m", "loop", "-k",
                                     f"{self.scenario} and {self.wire.name}"])])

    def turn_summary(self) -> str:
        parts = []
        for t in self.turns:
            calls = ", ".join(c.name for c in t.calls) or "-"
            parts.append(f"#{t.turn} stop={t.stop_reason} calls=[{calls}]")
        return "; ".join(parts)

    def violations_of(self, result: Result) -> list[Violation]:
        """The violations a record of `results()` stands for: an exchange check's of its turn, a
        loop check's of every turn (a warning such as loop.sandbox_refused may recur), none for
        loop.completed (it sums up the others)."""
        if result.check_id == "loop.completed":
            return []
        whole_loop = result.check_id in {spec.id for spec in checks_for("loop")}
        return [v for v in self.violations
                if v.check_id == result.check_id and (whole_loop or v.where.turn == result.turn)]

    def results(self, test_id: str, *, model: str = "", duration_s: float | None = None) -> list[Result]:
        """Result records: every exchange check per turn, then the loop checks."""
        out: list[Result] = []
        common = dict(test_id=test_id, target=self.target, api=self.wire.name, model=model, client="scenario",
                      case=self.scenario)
        for t in self.turns:
            verdict = t.verdict
            if verdict is None:
                continue
            for check_id, outcome in sorted(getattr(verdict, "outcomes", {}).items()):
                vs = [v.to_dict() for v in verdict.violations if v.check_id == check_id]
                out.append(Result(check_id=check_id, outcome=outcome, turn=t.turn,
                                  message=vs[0]["message"] if vs else "", violations=vs, **common))
        for spec in checks_for("loop"):
            vs = [v for v in self.violations if v.check_id == spec.id]
            outcome = loop_outcome(spec.id, vs, self.ended)
            if outcome is None:
                continue
            out.append(Result(check_id=spec.id, outcome=outcome, turn=vs[0].where.turn if vs else None,
                              message=vs[0].message if vs else "", violations=[v.to_dict() for v in vs], **common))
        out.append(Result(check_id="loop.completed", outcome="passed" if self.passed else "failed",
                          turn=self.failed_turn, message=self.title(),
                          violations=[v.to_dict() for v in self.errors], duration_s=duration_s,
                          details={"turns": len(self.turns), "rng_seed": self.rng_seed, "template": self.template,
                                   "summary": self.turn_summary()}, **common))
        return out
