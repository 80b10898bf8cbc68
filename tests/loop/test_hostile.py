"""A hostile model against the sandbox: the reference engine plays every escape and exhaustion
attempt (conformance/engine/hostile.py) on all three wires, and the loop driver's sandbox must
refuse or bound each one with its named reason, within time, memory and disk bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conformance.engine import hostile
from conformance.loop.conversation import LOOP_WIRES
from conformance.loop.driver import LoopDriver
from conformance.loop.limits import SandboxLimits
from conformance.loop.scenarios import load_scenario
from conformance.wire import RESPONSES

pytestmark = pytest.mark.loop

LIMITS = SandboxLimits()
REFUSED, LIMIT = "loop.sandbox_refused", "loop.sandbox_limit"

# scenario -> the (check id, rule or limit) each attempt must be stopped by, in order; a wire
# whose client plays a step through another tool names its own (BY_WIRE).
EXPECTED = {
    "hostile-escape-paths": [(REFUSED, "outside_root"), (REFUSED, "parent_dir"), (REFUSED, "parent_dir"),
                             (REFUSED, "outside_root")],
    "hostile-escape-shell": [(REFUSED, "shell_operator"), (REFUSED, "substitution"),
                             (REFUSED, "command_not_allowed"), (REFUSED, "shell_operator")],
    "hostile-codex-tricks": [(REFUSED, "outside_root"), (REFUSED, "patch_path")],
    "hostile-exhaust-depth": [(LIMIT, "path_depth"), (LIMIT, "path_depth")],
    "hostile-exhaust-amplify": [(LIMIT, "written_bytes"), (LIMIT, "output_bytes")],
    "hostile-exhaust-files": [(LIMIT, "files")],
    "hostile-exhaust-regex": [],  # RE2 answers at once: nothing to stop
    "hostile-exhaust-patch": [],  # not found, in linear time
}
# Claude Code's captured release offers no Grep tool and Codex none at all: the engine searches
# through the shell (`grep -rn '(a+)+$' .`), whose `$` the sandbox refuses even inside quotes.
BY_WIRE = {("hostile-exhaust-regex", "anthropic"): [(REFUSED, "substitution")],
           ("hostile-exhaust-regex", "responses"): [(REFUSED, "substitution")]}
SECONDS = 20  # per loop, under load; each attempt alone used to take 14 s to minutes, or never end


def _cases():
    """Every scenario on every wire its attempts fit; the default run takes each scenario on one
    wire (in turn, so all three are covered; 3-10 s on 2 loaded cores), the slow step the rest (5-13 s)."""
    for n, doc in enumerate(hostile.DOCUMENTS):
        wires = [w for w in LOOP_WIRES if doc["id"] not in hostile.CODEX_ONLY or w is RESPONSES]
        for wire in wires:
            slow = () if wire is wires[n % len(wires)] else (pytest.mark.slow,)
            yield pytest.param(doc, wire, id=f"{doc['id']}-{wire.name}", marks=slow)


def test_every_hostile_scenario_is_expected_and_valid(tmp_path: Path) -> None:
    assert sorted(EXPECTED) == sorted(d["id"] for d in hostile.DOCUMENTS)
    for doc in hostile.DOCUMENTS:  # the loop driver's loader validates against the scenario schema
        path = tmp_path / f"{doc['id']}.json"
        path.write_text(json.dumps(doc))
        assert load_scenario(path).id == doc["id"]


def _disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("doc,wire", list(_cases()))
def test_the_sandbox_refuses_or_bounds_every_hostile_attempt(conformant_engine, doc, wire, tmp_path):
    path = tmp_path / f"{doc['id']}.json"
    path.write_text(json.dumps(doc))
    scenario = load_scenario(path)
    (tmp_path / "work").mkdir()
    start = time.monotonic()
    report = LoopDriver(conformant_engine, wire, model="reference-model", workdir=tmp_path / "work",
                        keep_sandbox=True).run(scenario)
    elapsed = time.monotonic() - start
    report.raise_for_failure()  # a refusal is the model's tool error, never the end of the loop
    assert report.ended == "final"
    assert elapsed < SECONDS, f"{elapsed:.1f} s"
    want = BY_WIRE.get((doc["id"], wire.name), EXPECTED[doc["id"]])
    stopped = [(v.check_id, v.message.split(": ")[1]) for v in report.violations if v.check_id in (REFUSED, LIMIT)]
    assert stopped == want, report.turn_summary()
    assert all(v.severity == "warning" for v in report.violations if v.check_id in (REFUSED, LIMIT))
    results = {r.check_id: r.outcome for r in report.results("test")}
    for check_id in (REFUSED, LIMIT):
        assert results[check_id] == ("warning" if any(c == check_id for c, _ in want) else "passed")
    # every attempt came back to the model as the tool's error, and no result is over the output limit
    outcomes = [o for t in report.turns for o in t.outcomes]
    assert len(outcomes) == len(doc["script"]) - 1
    assert all(len(o.text.encode()) <= LIMITS.output_bytes + 100 for o in outcomes)
    assert all(len(json.dumps(t.request)) < 2 * 1024 * 1024 for t in report.turns)  # what the loop held
    # disk: nothing of the attempts beyond the limits, and nothing outside the sandbox
    root = Path(report.sandbox_root)
    seeded = sum(len(t.encode()) for t in doc["seed"].values())
    assert _disk(root) <= seeded + LIMITS.written_bytes
    if doc["id"] == "hostile-exhaust-amplify":
        assert _disk(root) == seeded and not (root / "c.txt").exists()
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == [root.name]
    assert not (tmp_path / "work" / "escape.txt").exists()
    if doc["id"] in ("hostile-exhaust-files", "hostile-exhaust-depth"):
        assert sum(1 for _ in root.rglob("*")) <= len(doc["seed"]) + LIMITS.files


def test_the_sandbox_goes_with_the_loop(conformant_engine, tmp_path):
    doc = next(d for d in hostile.DOCUMENTS if d["id"] == "hostile-exhaust-amplify")
    path = tmp_path / "amplify.json"
    path.write_text(json.dumps(doc))
    (tmp_path / "work").mkdir()
    LoopDriver(conformant_engine, LOOP_WIRES[0], workdir=tmp_path / "work").run(load_scenario(path))
    assert list((tmp_path / "work").iterdir()) == []
