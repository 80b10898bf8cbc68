"""The haystack and the needle (conformance.probes.haystack): deterministic text, the needle at its depth."""

from __future__ import annotations

import pytest

from conformance.probes.haystack import NEEDLE_STATEMENT, haystack, needle_phrase, needle_text


def test_haystack_is_deterministic_and_never_mentions_the_needle():
    a = haystack(600)
    assert a[:300] == haystack(300), "the first n sentences do not depend on how many were asked for"
    assert haystack(600, seed=1) != a
    assert not any("secret" in s.lower() or "passphrase" in s.lower() for s in a)
    assert needle_phrase("x") == needle_phrase("x") != needle_phrase("y")


@pytest.mark.parametrize("depth, index", [(0.0, 0), (0.5, 5), (1.0, 10)])
def test_needle_is_placed_at_its_depth_and_the_question_comes_last(depth, index):
    text = needle_text(10, depth, "amber-1234-willow")
    body, question = text.split("\n\n")
    sentences = [s.strip() + "." for s in body.split(".") if s.strip()]
    assert sentences[index] == NEEDLE_STATEMENT.format(phrase="amber-1234-willow")
    assert "What is the secret passphrase" in question
