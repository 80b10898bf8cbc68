"""Scenarios, driver side: load, draw the variables, seed the sandbox, check completion on disk.

Rules (contract: docs/contracts/scenarios.md):
- A scenario file is validated against `fixtures/scenarios/scenario.schema.json` when loaded; a bad
  file fails loudly with the file name and the first schema error.
- Variables are drawn at random per run by the driver (`ints`, `word`, `token`); the engine only
  ever sees them through tool results, so a canned reply cannot pass. A fixed `rng_seed` makes a
  run reproducible (the seed is printed in failures).
- The driver evaluates templates over variables only (`{{name|filter|...}}`); `result` and
  `results.N` belong to the engine and are refused here.
- Completion checks run on the sandbox after the loop; each failed check is one
  `loop.completion_check` violation that says which file, what was expected and what was found.
  This module shares no code with the engine's own scenario loader.
"""

from __future__ import annotations

import json
import random
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from conformance.core.paths import fixtures_dir

_TEMPLATE = re.compile(r"\{\{\s*([^}|]+?)\s*((?:\|\s*[a-z_]+\s*)*)\}\}")
_INT = re.compile(r"-?\d+")


class LoopScenarioError(ValueError):
    """An agent task the loop driver cannot run: a scenario file that does not load or validate,
    an unknown scenario id, a bad variable or template. Not the engine's `EngineScenarioError`."""


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    prompt: str
    trigger: str
    variables: dict[str, dict[str, Any]]
    seed: dict[str, str]
    completion: list[dict[str, Any]]
    max_turns: int = 8
    tool_choice_required: bool = False
    mcp_server: str | None = None  # an MCP server the client has attached (its tools sit in a namespace)
    resume: bool = False  # the task continues a stored session of the client (its history first)
    script: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def draw(self, rng: random.Random | None = None) -> dict[str, Any]:
        """Random values for this run's variables."""
        return draw_variables(self.variables, rng or random.Random())

    def seed_files(self, values: dict[str, Any]) -> dict[str, str]:
        return {render(path, values): render(text, values) for path, text in self.seed.items()}

    def matches(self, text: str) -> bool:
        return re.search(self.trigger, text, re.IGNORECASE) is not None


def scenarios_dir() -> Path:
    return fixtures_dir() / "scenarios"


def _schema() -> dict | None:
    p = scenarios_dir() / "scenario.schema.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None


def load_scenario(path: Path | str) -> Scenario:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LoopScenarioError(f"{path}: cannot read the scenario ({exc})") from exc
    schema = _schema()
    if schema is not None:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            where = "/" + "/".join(str(p) for p in e.path)
            raise LoopScenarioError(f"{path}: not a valid scenario at {where}: {e.message} "
                                "(see docs/contracts/scenarios.md)")
    return Scenario(
        id=data["id"], title=data["title"], prompt=data["prompt"], trigger=data["trigger"],
        variables=dict(data.get("variables") or {}), seed=dict(data.get("seed") or {}),
        completion=list(data.get("completion") or []), max_turns=int(data.get("max_turns", 8)),
        tool_choice_required=bool(data.get("tool_choice_required", False)),
        mcp_server=data.get("mcp_server"),
        resume=bool(data.get("resume", False)),
        script=list(data.get("script") or []), path=path,
    )


def load_scenarios(folder: Path | str | None = None) -> list[Scenario]:
    folder = Path(folder) if folder else scenarios_dir()
    out = [load_scenario(p) for p in sorted(folder.glob("*.json")) if p.name != "scenario.schema.json"]
    ids = [s.id for s in out]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise LoopScenarioError(f"{folder}: scenario ids are not unique: {sorted(dupes)}")
    return out


def get_scenario(scenario_id: str, folder: Path | str | None = None) -> Scenario:
    for s in load_scenarios(folder):
        if s.id == scenario_id:
            return s
    raise LoopScenarioError(f"no scenario {scenario_id!r} in {folder or scenarios_dir()}")


# ------------------------------------------------------------------------------- variables
def draw_variables(spec: dict[str, dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, v in spec.items():
        kind = v.get("kind")
        if kind == "ints":
            values[name] = [rng.randint(int(v["min"]), int(v["max"])) for _ in range(int(v["count"]))]
        elif kind == "word":
            values[name] = "".join(rng.choice(string.ascii_lowercase) for _ in range(8))
        elif kind == "token":
            values[name] = "".join(rng.choice("0123456789abcdef") for _ in range(12))
        else:
            raise LoopScenarioError(f"variable {name!r}: unknown kind {kind!r} (ints, word, token)")
    return values


# ------------------------------------------------------------------------------- templates
def _ints(value: Any) -> list[int]:
    if isinstance(value, list):
        return [int(x) for x in value]
    return [int(m) for m in _INT.findall(str(value))]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(x) for x in value)
    return str(value)


_FILTERS = {
    "lines": lambda v: "\n".join(str(x) for x in v) if isinstance(v, list) else str(v),
    "sum": lambda v: sum(_ints(v)),
    "sum_ints": lambda v: sum(_ints(v)),
    "max_int": lambda v: max(_ints(v)),
    "min_int": lambda v: min(_ints(v)),
    "upper": lambda v: _text(v).upper(),
    "lower": lambda v: _text(v).lower(),
    "strip": lambda v: _text(v).strip(),
    "first_line": lambda v: (_text(v).split("\n") or [""])[0],
    "count_lines": lambda v: len(_text(v).strip("\n").split("\n")) if _text(v).strip("\n") else 0,
    "json": lambda v: json.dumps(v, ensure_ascii=False),
}


def render(template: str, values: dict[str, Any]) -> str:
    """Evaluate `{{var|filter|...}}` over the drawn variables (driver side only)."""

    def sub(m: re.Match) -> str:
        expr = m.group(1).strip()
        if expr == "result" or expr.startswith("results."):
            raise LoopScenarioError(f"template {m.group(0)!r}: tool results are the engine's to evaluate, "
                                "not the driver's")
        if expr not in values:
            raise LoopScenarioError(f"template {m.group(0)!r}: unknown variable {expr!r} (known: {sorted(values)})")
        value: Any = values[expr]
        for f in [f.strip() for f in m.group(2).split("|") if f.strip()]:
            if f not in _FILTERS:
                raise LoopScenarioError(f"template {m.group(0)!r}: unknown filter {f!r} (known: {sorted(_FILTERS)})")
            value = _FILTERS[f](value)
        return _text(value)

    return _TEMPLATE.sub(sub, template)


# ------------------------------------------------------------------------------- completion
@dataclass(frozen=True)
class CompletionFailure:
    file: str
    rule: str  # equals | contains | not_contains | exists
    expected: str
    seen: str


def check_completion(scenario: Scenario, values: dict[str, Any], read_file) -> list[CompletionFailure]:
    """Every completion check that does not hold. `read_file(rel) -> str | None`."""
    failures: list[CompletionFailure] = []
    for check in scenario.completion:
        rel = render(check["file"], values)
        text = read_file(rel)
        shown = "(no such file)" if text is None else repr(text[:300])
        if "exists" in check:
            if bool(check["exists"]) != (text is not None):
                failures.append(CompletionFailure(rel, "exists", f"exists={check['exists']}", shown))
            continue
        if text is None:
            rule = next(k for k in ("equals", "contains", "not_contains") if k in check)
            if rule == "not_contains":
                continue  # an absent file contains nothing
            failures.append(CompletionFailure(rel, rule, repr(render(check[rule], values)), shown))
            continue
        if "equals" in check:
            want = render(check["equals"], values)
            got = text
            if check.get("strip"):
                want, got = want.strip(), got.strip()
            if got != want:
                failures.append(CompletionFailure(rel, "equals", repr(want), repr(got[:300])))
        elif "contains" in check:
            want = render(check["contains"], values)
            if want not in text:
                failures.append(CompletionFailure(rel, "contains", repr(want), shown))
        elif "not_contains" in check:
            want = render(check["not_contains"], values)
            if want in text:
                failures.append(CompletionFailure(rel, "not_contains", f"no {want!r}", shown))
    return failures
