"""dies-under-sustained-load: the clock arms only on shared-prefix load, and death is permanent."""

from __future__ import annotations

import concurrent.futures
import time

import httpx

from conformance.engine.launch import serve_engine_in_thread
from conformance.engine.sustained import SustainedLoad, prefix_key

BODY = {"model": "m", "max_tokens": 400, "stream": True, "system": "shared system prompt",
        "messages": [{"role": "user", "content": "Write a long answer."}]}


def test_prefix_key_is_the_system_prompt_and_tools_not_the_conversation():
    longer = dict(BODY, messages=BODY["messages"] + [{"role": "assistant", "content": "ok"}])
    assert prefix_key(BODY) == prefix_key(longer)
    assert prefix_key(BODY) != prefix_key(dict(BODY, system="salt-1 shared system prompt"))


def test_distinct_prefixes_never_arm_the_clock():
    load = SustainedLoad(die_after_s=0.0, die_at_inflight=2)
    assert not load.start(1, dict(BODY, system="a"))
    assert not load.start(2, dict(BODY, system="b"))  # two in flight, but no shared prefix
    assert load.held_since is None
    assert load.start(3, dict(BODY, system="a"))  # now two share "a": held for >= 0 s
    load.finish(1)
    assert load.start(4, dict(BODY, system="c")), "once dead, every request fails"


def test_engine_answers_500_after_the_hold_and_stays_dead_while_models_still_answers():
    with serve_engine_in_thread(faults=["dies-under-sustained-load"], die_after_s=0.3, die_at_inflight=2,
                                decode_tokens_per_s=200) as url:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two slow streams sharing the prefix
            slow = [pool.submit(httpx.post, url + "/v1/messages", json=BODY, timeout=30) for _ in range(2)]
            time.sleep(0.6)
            late = httpx.post(url + "/v1/messages", json=BODY, timeout=30)
            for f in slow:
                try:
                    f.result()
                except httpx.TransportError:
                    pass  # the streams in flight are cut when the worker dies
        assert late.status_code == 500 and late.json()["type"] == "error", late.text
        alone = httpx.post(url + "/v1/messages", json=dict(BODY, system="another prefix", stream=False), timeout=30)
        assert alone.status_code == 500, "dead until restarted, whatever the request"
        assert httpx.get(url + "/v1/models", timeout=10).status_code == 200
