"""The attribution matrix: every router fault is caught and attributed to the router, every engine
fault seen through the correct router is attributed to the engine, a correct stack reports nothing.

Real servers on loopback (reference engine + reference router, in threads); the matrix is printed
(run with -s to see it) and written to reports/router/attribution-matrix.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from router_stack import ENGINE_FAULTS_MODE, ROUTER_FAULTS_MODE, matrix, render

from conformance.core.paths import fixtures_dir
from conformance.layers.attribution import symptom
from conformance.router.faults import ROUTER_FAULTS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows():
    return matrix()


def _fault_table() -> dict[str, list[str]]:
    table = json.loads((fixtures_dir() / "faults.json").read_text())
    return {row["fault"]: row["checks"] for row in table["rows"] + table.get("found", [])}


def test_matrix_attributes_every_fault_to_its_layer(rows):
    text = render(rows)
    print("\n" + text)
    out = REPO / "reports" / "router"
    out.mkdir(parents=True, exist_ok=True)
    (out / "attribution-matrix.md").write_text(text + "\n", encoding="utf-8")
    wrong = []
    for r in rows:
        want = {"none": "none", "router": "router", "engine": "engine"}[r.layer_side]
        if r.verdict != want:
            detail = [f"{o.name}: {o.check_ids} -> {o.attribution.summary() if o.attribution else 'no attribution'}"
                      for o in r.failing]
            wrong.append(f"{r.layer_side} fault {r.fault} ({r.mode}): attributed {r.verdict}, expected {want}; {detail}")
    assert not wrong, "\n".join(wrong)


def test_every_row_is_caught_by_a_check_the_fault_table_names(rows):
    table = _fault_table()
    missing = []
    for r in rows:
        if r.layer_side == "none":
            continue
        # compared as symptoms: the two wires' names of one rule, and the deadline family, are one
        listed = {symptom(c) for c in table.get(r.fault, [])}
        seen = {symptom(c) for c in set(r.checks) | set(r.engine_checks)}
        if listed and not listed & seen:
            missing.append(f"{r.fault} ({r.mode}): fault table lists {sorted(listed)}, seen {sorted(seen)}")
    assert not missing, "\n".join(missing)


# Router faults a single exchange cannot show: a clean one-call turn needs the engine's own answer
# to tell a dropped call from a model's choice (tests/suite/test_client_wire_faults.py).
JUDGED_ELSEWHERE = {"first-tool-call-only"}


def test_matrix_covers_every_router_fault_and_the_engine_faults_a_request_can_show(rows):
    assert set(ROUTER_FAULTS) - JUDGED_ELSEWHERE == set(ROUTER_FAULTS_MODE)
    assert {r.fault for r in rows if r.layer_side == "engine"} == set(ENGINE_FAULTS_MODE)


def test_correct_stack_shows_what_translation_loses_as_information(rows):
    translate = next(r for r in rows if r.layer_side == "none" and r.mode == "openai")
    turn2 = next(o for o in translate.observations if o.name == "turn2")
    assert not turn2.violations
    assert any("output_config.effort xhigh -> reasoning_effort high" in m for m in turn2.mappings), turn2.mappings
    assert any("context_management -> dropped" in m for m in turn2.mappings), turn2.mappings
    assert any("signatures" in m for m in turn2.lost), turn2.lost
    assert any("cache_control" in m for m in turn2.lost), turn2.lost
    passthrough = next(r for r in rows if r.layer_side == "none" and r.mode == "anthropic")
    assert all(not o.lost for o in passthrough.observations)


def test_an_ignored_forced_tool_choice_is_blamed_on_the_engine_from_what_the_router_forwarded(rows):
    """The translating router maps Anthropic {type: any} to OpenAI "required": the engine, given
    exactly that, answers in text, so the engine is to blame (llama.cpp did this)."""
    for mode, path, choice in (("openai", "/v1/chat/completions", "required"), ("anthropic", "/v1/messages", {"type": "any"})):
        row = next(r for r in rows if r.fault == "tool-choice-ignored" and r.mode == mode)
        assert [o.name for o in row.failing] == ["turn1-forced"], row.checks
        att = row.failing[0].attribution
        assert att.layer == "engine" and att.replayed == "forwarded" and att.engine_path == path, att.summary()
        assert att.engine_request["tool_choice"] == choice
        assert {v.check_id for v in att.engine_violations if v.is_error} == {"tools.choice_honoured"}
