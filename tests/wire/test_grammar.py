"""Every wire's grammar is the same small facade, and every rule it reports is a wire rule.

The Dialect's `grammar` offers exactly check_stream, check_response, check_error and
content_started (the rule ids and tables live beside it, in the wire package's rules.py); each
rule of a wire grammar and of the SSE decoder is registered with scope `wire`, judging the stack.
"""

from __future__ import annotations

import pytest

from conformance.core import registry
from conformance.wire import DIALECTS

GRAMMAR_API = {"check_stream", "check_response", "check_error", "content_started"}


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_the_grammar_offers_the_four_functions(name):
    grammar = DIALECTS[name].grammar
    assert set(grammar.__all__) == GRAMMAR_API
    assert all(callable(getattr(grammar, f)) for f in GRAMMAR_API)


def test_every_grammar_rule_is_a_wire_rule_judging_the_stack():
    areas = {"sse", *(d.rule_prefix.rstrip(".") for d in DIALECTS.values())}
    rules = [s for s in registry.registered() if s.area in areas]
    assert len(rules) > 60
    wrong = [(s.id, s.scope, s.judges) for s in rules if (s.scope, s.judges) != ("wire", "stack")]
    assert not wrong
