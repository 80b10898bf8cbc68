"""Stream pacing of the reference engine (EngineConfig.prefill_tokens_per_s / decode_tokens_per_s,
CLI --prefill-rate / --decode-rate): the first content waits prompt tokens / prefill rate, the
content arrives at the decode rate; the defaults keep today's pace; bad rates exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from conformance.engine.launch import serve_engine_in_thread

PROMPT = "hello there " * 100  # about 400 engine tokens


def _timed_stream(url: str) -> tuple[float, float, int, int]:
    """(first content s, end s, prompt tokens, output tokens) of one streamed answer."""
    body = {"model": "m", "max_tokens": 300, "stream": True, "messages": [{"role": "user", "content": PROMPT}]}
    t0 = time.monotonic()
    first = None
    usage = {}
    with httpx.stream("POST", url + "/v1/messages", json=body, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                if data.get("type") == "content_block_delta" and first is None:
                    first = time.monotonic() - t0
                if data.get("type") == "message_start":
                    usage["input"] = data["message"]["usage"]["input_tokens"]
                if data.get("type") == "message_delta":
                    usage["output"] = data["usage"]["output_tokens"]
    return first, time.monotonic() - t0, usage["input"], usage["output"]


def test_prefill_and_decode_rates_pace_the_stream():
    prefill, decode = 2000.0, 400.0
    with serve_engine_in_thread(prefill_tokens_per_s=prefill, decode_tokens_per_s=decode) as url:
        first, end, prompt, output = _timed_stream(url)
    want_first = prompt / prefill
    want_end = want_first + output / decode
    assert first >= want_first * 0.95, (first, want_first)
    assert end >= want_end * 0.9, (end, want_end)
    assert end < want_end + 2.0  # paced, not stalled


def test_default_pace_has_no_prefill_wait():
    with serve_engine_in_thread() as url:
        first, _end, prompt, _ = _timed_stream(url)
    assert first < prompt / 2000.0 + 1.0


@pytest.mark.parametrize("flag", ["--prefill-rate", "--decode-rate"])
def test_cli_refuses_a_rate_that_is_not_positive(flag):
    p = subprocess.run([sys.executable, "-m", "conformance.cli", "engine", "--port", "0", flag, "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and flag in p.stderr and "positive" in p.stderr
