"""Root causes: the same answer on N tests is one cause with N; the same check failing on N tests is
one line with N; what an answer says about the setup names the option to change; only models that
answered are named."""

from __future__ import annotations

import pytest

from conformance.core.registry import registered as load_all
from conformance.core.results import Result, read_results
from conformance.report.causes import MAX_SHOWN, answered_models, classify, from_results, headline_lines

load_all()


def _failed(test: str, check: str, seen: str, layer: str = "") -> Result:
    return Result(test_id=test, check_id=check, outcome="failed", layer=layer, message=f"refused: {seen}",
                  violations=[{"check_id": check, "message": f"refused: {seen}", "seen": seen, "severity": "error"}])


@pytest.mark.parametrize(("status", "text", "kind"), [
    (401, "", "auth"),
    (403, "forbidden", "auth"),
    (500, "No connected db.", "auth"),  # LiteLLM with a master key, asked without it
    (400, "Invalid model name passed in model=claude-x", "unknown model"),
    (404, 'The model "nope" does not exist', "unknown model"),
    (404, "Not Found", "base path"),
    (501, "Unsupported method ('POST')", "not an LLM API"),
    (500, "Internal Server Error", None),
    (400, "max_tokens must be at least 1", None),
])
def test_what_an_answer_says_about_the_setup(status, text, kind):
    assert classify(status, text) == kind
    assert classify(None, "", connect_error=True) == "down"


def test_one_answer_on_every_failing_test_is_one_cause_of_the_setup():
    records = [_failed(f"t::{n}", check, "HTTP 401: invalid x-api-key")
               for n, check in enumerate(["suite.request.accepted", "loop.completed", "suite.error.envelope"] * 4)]
    causes = from_results(records)
    assert len(causes) == 1
    assert causes[0].kind == "auth" and causes[0].count == 12
    assert "--conformance-api-key" in causes[0].line() and "HTTP 401 'invalid x-api-key'" in causes[0].line()


def test_an_answer_of_some_tests_is_those_tests_cause_and_checks_group_by_id():
    records = [_failed(f"count::{n}", "suite.count_tokens.available", "HTTP 404: Not Found", "router")
               for n in range(5)]
    records += [_failed(f"stream::{n}", "anthropic.stream.stop_sequence_present", "keys ['stop_reason']", "engine")
                for n in range(7)]
    records.append(_failed("one::x", "tools.call.offered", "HTTP 400: bad tool"))  # one test: its own finding
    causes = from_results(records)
    assert [(c.kind, c.count) for c in causes] == [("check", 7), ("answer", 5), ("check", 1)]
    stream, count, single = causes
    assert stream.check_id == "anthropic.stream.stop_sequence_present" and stream.layer == "engine"
    # a 404 on some tests is not "wrong base path": it is the path those tests asked for
    assert count.kind == "answer" and "--target" not in count.fix and "count_tokens" in count.fix
    assert single.check_id == "tools.call.offered"


def test_at_most_ten_lines_then_how_many_more():
    records = [_failed(f"t::{n}", check, "x") for n, check in enumerate(
        ["suite.request.accepted", "suite.error.envelope", "tools.call.offered", "loop.completed",
         "anthropic.stream.stop_sequence_present", "suite.stop_sequence.honoured", "openai.stream.usage_chunk",
         "translation.tools_preserved", "anthropic.response.schema", "suite.count_tokens.available",
         "identity.model_matches", "suite.stream.incremental"])]
    lines = headline_lines(from_results(records))
    assert len(lines) == MAX_SHOWN + 1 and lines[-1].startswith("... and 2 more")


def test_only_models_that_answered_are_named():
    sent_only = [Result(test_id="t::a", check_id="loop.completed", outcome="failed", model="claude-opus-5-5"),
                 Result(test_id="t::b", check_id="suite.stream.incremental", outcome="unverifiable", model="local")]
    assert answered_models(sent_only) == []
    answered = sent_only + [Result(test_id="t::c", check_id="identity.model_matches", outcome="passed",
                                   model="alias", message="answered by served-model")]
    assert answered_models(answered) == ["served-model"]


def test_a_real_faulty_run_names_its_fault_as_one_cause(faulty_run):
    causes = from_results(read_results(faulty_run / "results"))
    assert causes and causes[0].check_id == "anthropic.stream.stop_sequence_present", [c.what for c in causes]
    failing_tests = {r.test_id for r in read_results(faulty_run / "results")
                     if r.check_id == causes[0].check_id and r.outcome == "failed"}
    assert causes[0].count == len(failing_tests) >= 1
    summary = (faulty_run / "summary.md").read_text()
    head = summary.split("### ", 1)[0]  # before the matrix
    assert "## Root causes" in head and "anthropic.stream.stop_sequence_present failed on" in head
    assert "| test | check | layer | message | failure folder |" in summary
