"""Driver-side scenario loading: variables, seeding, templates over variables, completion checks."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import (
    LoopScenarioError,
    check_completion,
    load_scenario,
    load_scenarios,
    render,
)


def test_bundled_scenarios_cover_the_required_tasks() -> None:
    scenarios = {s.id: s for s in load_scenarios()}
    assert len(scenarios) >= 5
    # exact content; a number computed from a seeded file; an edit; multi-step; parallel calls
    assert {"write-file", "sum-numbers", "edit-file", "multi-step", "parallel-reads"} <= set(scenarios)
    parallel = scenarios["parallel-reads"]
    assert any(len(t.get("tool_calls", [])) >= 2 for t in parallel.script)
    for s in scenarios.values():
        assert s.matches(s.prompt)
        assert s.completion


def test_variables_are_random_per_run_and_reproducible_by_seed() -> None:
    s = {x.id: x for x in load_scenarios()}["sum-numbers"]
    a, b = s.draw(random.Random(1)), s.draw(random.Random(2))
    assert a != b
    assert s.draw(random.Random(1)) == a
    nums = a["nums"]
    assert len(nums) == 6 and all(100 <= n <= 999 for n in nums)
    files = s.seed_files(a)
    assert files["numbers.txt"] == "\n".join(map(str, nums)) + "\n"


def test_templates_filters_and_refusals() -> None:
    values = {"nums": [1, 2, 3], "w": "abc"}
    assert render("{{nums|sum}}", values) == "6"
    assert render("{{nums|lines}}", values) == "1\n2\n3"
    assert render("{{w|upper}}-{{ w }}", values) == "ABC-abc"
    assert render("{{nums|max_int}} {{nums|min_int}} {{nums|count_lines}}", values) == "3 1 3"
    with pytest.raises(LoopScenarioError, match="engine"):
        render("{{result|sum_ints}}", values)
    with pytest.raises(LoopScenarioError, match="unknown variable"):
        render("{{nope}}", values)
    with pytest.raises(LoopScenarioError, match="unknown filter"):
        render("{{w|reverse}}", values)


def test_completion_checks_on_disk(tmp_path: Path) -> None:
    s = {x.id: x for x in load_scenarios()}["sum-numbers"]
    values = s.draw(random.Random(7))
    box = Sandbox(tmp_path)
    box.seed(s.seed_files(values))
    failures = check_completion(s, values, box.read_text)
    assert [f.rule for f in failures] == ["equals"] and failures[0].seen == "(no such file)"
    (tmp_path / "sum.txt").write_text(f"{sum(values['nums']) + 1}\n")
    assert check_completion(s, values, box.read_text)[0].expected == repr(str(sum(values["nums"])))
    (tmp_path / "sum.txt").write_text(f"{sum(values['nums'])}\n")
    assert check_completion(s, values, box.read_text) == []


def test_edit_scenario_completion(tmp_path: Path) -> None:
    s = {x.id: x for x in load_scenarios()}["edit-file"]
    values = s.draw(random.Random(3))
    box = Sandbox(tmp_path)
    box.seed(s.seed_files(values))
    assert {f.rule for f in check_completion(s, values, box.read_text)} == {"contains", "not_contains"}
    p = tmp_path / "settings.conf"
    p.write_text(p.read_text().replace("mode=draft", "mode=final"))
    assert check_completion(s, values, box.read_text) == []


def test_bad_scenario_file_fails_loudly(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"format": "conformance.scenario", "version": 1, "id": "Bad Id"}))
    with pytest.raises(LoopScenarioError, match="bad.json"):
        load_scenario(p)
