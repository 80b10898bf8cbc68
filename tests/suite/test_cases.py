"""conformance/suite/cases.py: a request the suite derives is checked against its wire's request
rules before it is sent; one that breaks them is the suite's own bug, never sent."""

from __future__ import annotations

import pytest

from conformance.capture.format import CapturedRequest
from conformance.suite.cases import DerivedRequestInvalid, valid_derived
from conformance.wire import ANTHROPIC

BODY = {"model": "m", "max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 32000},
        "messages": [{"role": "user", "content": "say hi"}]}


def test_a_derived_request_is_held_to_its_wire_and_the_captured_betas():
    interleaved = CapturedRequest("POST", "/v1/messages", "", {"anthropic-beta": "interleaved-thinking-2025-05-14"}, BODY)
    valid_derived(ANTHROPIC, BODY, interleaved, "as captured")  # the budget may reach max_tokens under the beta
    plain = CapturedRequest("POST", "/v1/messages", "", {}, BODY)
    with pytest.raises(DerivedRequestInvalid, match=r"suite bug: .*budget_tokens 32000 must be below max_tokens 32000"):
        valid_derived(ANTHROPIC, BODY, plain, "max_tokens lowered")
    valid_derived(ANTHROPIC, ANTHROPIC.with_output_cap(BODY, 4096), plain, "the writer keeps it valid")
