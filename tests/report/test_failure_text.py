"""The failure text tells the same story as the verdict: the likely cause is the attributed
layer's (never `layer: router` beside "the engine ignores ..."), and a block repeated word for
word is printed once with its count."""

from __future__ import annotations

import pytest

from conformance.core.registry import load_catalog, lookup, registered, violation
from conformance.report.text import LAYER_CAUSES, _subject, cause_for_layer, format_failure

USAGE = "openai.stream.usage_chunk"  # "a router drops stream_options before the engine, or the engine ignores ..."


def _cause_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith("likely cause:"))


def test_the_likely_cause_is_the_attributed_layers():
    v = violation(USAGE, "no usage chunk", expected="a usage chunk", seen="no chunk with a usage object")
    full = lookup(USAGE).likely_cause
    assert "router" in full and "engine ignores" in full  # the registry names both layers
    as_router = _cause_line(format_failure("t", [v], extra={"layer": "router — introduced by the router"}))
    as_engine = _cause_line(format_failure("t", [v], extra={"layer": "engine — originated in the engine"}))
    assert "router drops stream_options" in as_router and "engine ignores" not in as_router
    assert "engine ignores" in as_engine and "router drops" not in as_engine
    for undecided in ({}, {"layer": "both — both layers"}, {"layer": "unknown — the engine could not be asked"}):
        assert _cause_line(format_failure("t", [v], extra=undecided)).endswith(full)


@pytest.mark.parametrize("layer", ["router", "engine"])
def test_no_registered_cause_blames_the_other_layer(layer):
    load_catalog()
    other = "engine" if layer == "router" else "router"
    specs = registered()
    specs = list(specs.values()) if isinstance(specs, dict) else list(specs)
    narrowed = 0
    for spec in specs:
        if not spec.likely_cause:
            continue
        cause = cause_for_layer(spec.likely_cause, layer)
        narrowed += cause != spec.likely_cause
        parts = [cause] if cause in LAYER_CAUSES.values() else cause.split("; or ")
        assert all(_subject(p) != other for p in parts), (spec.id, cause)
    assert narrowed >= 10  # the catalog does name both layers in many causes


def test_a_repeated_block_is_printed_once_with_its_count():
    same = [violation("suite.count_tokens.available", "count_tokens is not served: HTTP 404", turn=n,
                      expected="200 with {input_tokens}", seen="HTTP 404: Not Found") for n in range(1, 26)]
    other = violation("suite.request.accepted", "the target refused the request: HTTP 404", turn=3)
    text = format_failure("t", [*same, other])
    assert text.count("[error] suite.count_tokens.available") == 1
    assert "repeated: 24 more time(s)" in text and "turn 2, turn 3" in text and "(16 more)" in text
    assert text.count("[error] suite.request.accepted") == 1 and text.count("likely cause:") == 2
