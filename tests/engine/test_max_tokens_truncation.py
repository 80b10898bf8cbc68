"""The reference engine's answer to a max_tokens above the room its context leaves: clamped and
reported as max_tokens when the answer hits the room; under `max-tokens-silent-truncation` the
answer fills the room and claims end_turn / stop."""

from __future__ import annotations

import json

import httpx
import pytest

from conformance.engine.launch import serve_engine_in_thread

CONTEXT = 4096
PROMPT = "word " * 3000  # ~3000 engine tokens: about 1000 left


def _ask(url: str, api: str, text: str):
    if api == "anthropic":
        body = {"model": "m", "max_tokens": 128000, "messages": [{"role": "user", "content": text}]}
        out = httpx.post(url + "/v1/messages", json=body, timeout=60).json()
        return out["stop_reason"], out["usage"]["input_tokens"], out["usage"]["output_tokens"]
    body = {"model": "m", "max_tokens": 128000, "messages": [{"role": "user", "content": text}]}
    out = json.loads(httpx.post(url + "/v1/chat/completions", json=body, timeout=60).content)
    return out["choices"][0]["finish_reason"], out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_silent_truncation_fills_the_room_and_claims_a_natural_end(api):
    with serve_engine_in_thread(faults=["max-tokens-silent-truncation"], max_context=CONTEXT) as url:
        stop, prompt, output = _ask(url, api, PROMPT)
    assert stop in ("end_turn", "stop")
    assert CONTEXT - prompt - 16 <= output <= CONTEXT - prompt


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_conformant_engine_clamps_and_reports_the_budget(api):
    with serve_engine_in_thread(max_context=CONTEXT) as url:
        stop, prompt, output = _ask(url, api, PROMPT + " Write a long answer.")
        short = _ask(url, api, PROMPT)
    assert stop in ("max_tokens", "length") and output <= CONTEXT - prompt
    assert short[0] in ("end_turn", "stop") and short[2] < 100  # the default answer ends by itself
