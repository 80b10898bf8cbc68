"""Silent truncation of a max_tokens above the context (client_wire.max_tokens.over_context):
the rule on figures a correct server and a truncating one report, and the suite against the
reference engine with and without `max-tokens-silent-truncation`."""

from __future__ import annotations

import pytest

# Imported before pytester's first in-process run (see test_prefix_reuse_signals.py).
import conformance.engine.server  # noqa: F401
from conformance.checks import client_wire as rules
from conformance.plugin import SUITE_DIR

SUITE = str(SUITE_DIR / "test_client_wire.py")
SMALL_CONTEXT = 32768
CHECK = rules.MAX_TOKENS_OVER_CONTEXT


def _fig(stop, prompt, output, context=SMALL_CONTEXT):
    return rules.AnswerFigures(stop, prompt, output, context, "/v1/models max_model_len")


@pytest.mark.parametrize("stop,output,truncated", [
    ("end_turn", SMALL_CONTEXT - 23000, True),  # filled the room, claims a natural end
    ("end_turn", SMALL_CONTEXT - 23000 - 10, True),  # within the slack of template tokens
    ("stop_sequence", SMALL_CONTEXT - 23000, True),
    ("max_tokens", SMALL_CONTEXT - 23000, False),  # clamped and said so
    ("model_context_window_exceeded", SMALL_CONTEXT - 23000, False),
    ("end_turn", 412, False),  # ended by itself well inside the room
    ("end_turn", SMALL_CONTEXT - 23000 - 100, False),
    ("tool_use", 90, False),
])
def test_silent_truncation_definition(stop, output, truncated):
    assert (rules.silent_truncation(128000, _fig(stop, 23000, output)) is not None) is truncated


def test_silent_truncation_needs_the_figures_and_an_over_context_ask():
    assert rules.silent_truncation(128000, _fig("end_turn", 23000, 9768, context=None)) is None  # none advertised
    assert rules.silent_truncation(128000, _fig("end_turn", None, 9768)) is None
    assert rules.silent_truncation(4096, _fig("end_turn", 23000, 4096)) is None  # max_tokens fits the room
    # a room too small to tell a cut from an answer that ends near it
    assert rules.silent_truncation(128000, _fig("end_turn", SMALL_CONTEXT - 100, 100)) is None


def _outcome(run):
    found = [r for r in run.results if r.check_id == CHECK]
    assert len(found) == 1, [r.check_id for r in run.results]
    return found[0]


def test_clamping_engine_passes_and_says_truncation_was_judged(pytester, suite):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(max_context=SMALL_CONTEXT) as url:
        run = suite(pytester, url, SUITE, "-k", "max_tokens_over_context")
    r = _outcome(run)
    assert r.outcome == "passed" and "not cut silently" in r.message, r.message


def test_silently_truncating_engine_fails_naming_the_cut(pytester, suite):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=["max-tokens-silent-truncation"], max_context=SMALL_CONTEXT) as url:
        run = suite(pytester, url, SUITE, "-k", "max_tokens_over_context")
    r = _outcome(run)
    assert r.outcome == "failed" and "silently truncated" in r.message, r.message
    assert "/v1/models max_model_len" in r.message and "'end_turn'" in r.message, r.message
    assert set(run.failed_checks) == {CHECK}


def test_a_context_limit_option_too_large_leaves_it_unjudged_as_no_cut(pytester, suite):
    """--conformance-context-limit replaces the advertised length (here one twice the real one:
    the output no longer fills the room, so nothing is claimed)."""
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=["max-tokens-silent-truncation"], max_context=SMALL_CONTEXT) as url:
        run = suite(pytester, url, SUITE, "-k", "max_tokens_over_context",
                    f"--conformance-context-limit={2 * SMALL_CONTEXT}")
    r = _outcome(run)
    assert r.outcome == "passed" and "room" in r.message, r.message
