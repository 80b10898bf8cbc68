"""The registry of wires (`conformance.wire.registry`): one name -> wire map, one path -> wire
map, and the Dialect's endpoint readers they are built on."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.registry import (
    DIALECTS,
    dialect,
    dialect_for_path,
    is_count_tokens_path,
    is_generation_path,
    register_dialect,
    unregister_dialect,
)


def test_a_name_and_a_dialect_both_give_the_dialect():
    assert dialect("openai") is CHAT and dialect(CHAT) is CHAT
    with pytest.raises(ValueError, match="'anthropic', 'openai', 'responses'"):
        dialect("gemini")


def test_registering_twice_is_a_no_op_and_a_taken_name_is_refused():
    assert register_dialect(CHAT) is CHAT and DIALECTS["openai"] is CHAT
    impostor = dataclasses.replace(CHAT)
    with pytest.raises(ValueError, match="registered already"):
        register_dialect(impostor)
    unregister_dialect(impostor)  # not the registered object: nothing leaves
    assert DIALECTS["openai"] is CHAT


def test_a_wire_registered_for_a_while_leaves_again():
    toy = dataclasses.replace(CHAT, name="toy", generation_path="/v1/toy/generate")
    register_dialect(toy)
    try:
        assert dialect("toy") is toy and dialect_for_path("/x/v1/toy/generate?q=1") is toy
    finally:
        unregister_dialect(toy)
    assert "toy" not in DIALECTS and dialect_for_path("/v1/toy/generate") is None


def test_endpoint_match_is_the_length_of_the_longest_endpoint_the_path_ends_with():
    assert ANTHROPIC.endpoint_match("/v1/messages") == len("/messages")
    assert ANTHROPIC.endpoint_match("/anthropic/v1/messages/count_tokens/?beta=true") == len("/messages/count_tokens")
    assert ANTHROPIC.endpoint_match("/v1/chat/completions") is None
    assert RESPONSES.serves_path("/openai/v1/responses/") and not RESPONSES.serves_path("/v1/responses/abc")


def test_generation_and_count_tokens_paths_are_told_apart():
    assert ANTHROPIC.is_generation("/v1/messages?beta=true")
    assert not ANTHROPIC.is_generation("/v1/messages/count_tokens")
    assert is_generation_path("/v1/chat/completions/") and not is_generation_path("/v1/models")
    assert is_count_tokens_path("/v1/messages/count_tokens") and not is_count_tokens_path("/v1/messages")
