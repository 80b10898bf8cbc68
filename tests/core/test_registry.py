"""The one registry and the one formatting path; a fresh process sees every check."""

import importlib
import subprocess
import sys

import pytest

from conformance.core import registry
from conformance.core.failures import Violation, Where
from conformance.report.text import ConformanceFailure, format_violation

registry.register(
    "suite.selftest.example",
    "an example check used by the core self-tests",
    likely_cause="the example cause",
    judges="stack",
)


def test_violation_refuses_unknown_check_id():
    with pytest.raises(KeyError, match="unknown check id 'suite.nope.nothing'"):
        registry.violation("suite.nope.nothing", "x")


def test_register_rejects_unknown_area_and_conflicting_redefinition():
    with pytest.raises(ValueError, match="must start with one of the areas"):
        registry.register("bogus.area.rule", "t")
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("suite.selftest.example", "a different title")


def test_format_violation_names_what_where_expected_seen_and_cause():
    v = registry.violation(
        "suite.selftest.example",
        "delta lacks stop_sequence",
        expected="stop_sequence present (nullable)",
        seen="keys: stop_reason",
        turn=2,
        event_index=37,
        event_type="message_delta",
        pointer="/delta",
    )
    text = format_violation(v)
    assert text.splitlines()[0] == "[error] suite.selftest.example: delta lacks stop_sequence"
    assert "turn 2, event #37 message_delta, at /delta" in text
    assert "expected: stop_sequence present (nullable)" in text
    assert "seen:     keys: stop_reason" in text
    assert "likely cause: the example cause" in text


def test_violation_round_trips_through_dict_and_at_adds_location():
    v = Violation("suite.selftest.example", "m", "e", "s", Where(event_index=3), "warning")
    assert Violation.from_dict(v.to_dict()) == v
    assert v.at(turn=4).where == Where(turn=4, event_index=3)
    with pytest.raises(ValueError):
        Violation("suite.selftest.example", "m", severity="fatal")


def test_conformance_failure_is_an_assertion_error_listing_errors_before_warnings():
    warn = registry.violation("suite.selftest.example", "w", severity="warning")
    err = registry.violation("suite.selftest.example", "e")
    f = ConformanceFailure("title", [warn, err], reproduce=["conformance replay x.json"])
    assert isinstance(f, AssertionError)
    text = str(f)
    assert text.index("[error]") < text.index("[warning]")
    assert text.rstrip().endswith("conformance replay x.json")
    assert f.check_ids == ["suite.selftest.example"]


def test_every_registered_check_has_a_title_and_a_valid_severity():
    specs = registry.registered()
    assert specs, "registered() found no checks"
    for s in specs:
        assert s.title.strip(), s.id
        assert s.severity in ("error", "warning", "info"), s.id


# ----------------------------------------------------------------------------- a fresh process
# (tests/test_layout.py renders a fresh `conformance report html` with checks of every scope)
def test_a_fresh_process_looks_up_a_wire_rule_title():
    importlib.import_module("conformance.wire.anthropic.grammar")  # the title, known without the loader under test
    expected = registry.get("anthropic.stream.grammar").title
    done = subprocess.run([sys.executable, "-c", "from conformance.core.registry import lookup; "
                           "spec = lookup('anthropic.stream.grammar'); print(spec.title if spec else 'NOT FOUND')"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
