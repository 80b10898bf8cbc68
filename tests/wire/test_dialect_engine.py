"""Every request a writer derives from a valid captured request is one the reference engine
accepts: the writers keep a request valid (a derived request that lowers max_tokens below a
thinking budget is refused by a conformant engine, which is how the suite once failed
captured/claude-code/2.1.332/haiku.json on its own).

One test per wire, over the corpus' main requests: each writer's output goes to the engine (a real
process, `conformance engine`) at its wire's generation path; count_tokens bodies go to the
count_tokens path. A body two requests derive alike (the first turn of each turn of one loop) is
sent once.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from corpus_requests import derived, of_wire

from conformance.engine.launch import spawn_engine

DEADLINE = 60.0
SENDERS = 4  # requests in flight: the engine answers while the next body is sent
CAPS = (4096, 1000)  # one that lowers a thinking budget, one that leaves none room


@pytest.fixture(scope="module")
def engine_url():
    with spawn_engine() as engine:
        yield engine.url


@pytest.mark.parametrize("name", ["anthropic", "openai", "responses"])
def test_every_derived_request_is_accepted_by_the_reference_engine(engine_url, name):
    bodies: dict[tuple[str, str], str] = {}  # (path, body) -> what derived it
    for req in of_wire(name):
        for writer, body in derived(req.wire, req.body, CAPS):
            path = req.wire.count_tokens_path if writer == "count_tokens_request" else req.wire.generation_path
            bodies.setdefault((path, json.dumps(body)), f"{req.id} {writer}")
    with httpx.Client(base_url=engine_url, timeout=DEADLINE) as client, ThreadPoolExecutor(SENDERS) as pool:
        def refusal(item: tuple[tuple[str, str], str]) -> str | None:
            (path, content), what = item
            answer = client.post(path, content=content, headers={"content-type": "application/json"})
            return None if answer.status_code == 200 else f"{what}: HTTP {answer.status_code} {answer.text[:200]}"

        refused = [r for r in pool.map(refusal, bodies.items()) if r is not None]
    assert len(bodies) > 50
    assert not refused, "\n".join(refused)


def test_the_engine_refuses_what_a_careless_writer_would_derive(engine_url):
    haiku = next(r for r in of_wire("anthropic") if r.id == "claude-code/2.1.332/haiku#0")
    careless = {**haiku.body, "max_tokens": 4096}  # its thinking budget (31999) left above the new cap
    answer = httpx.post(engine_url + "/v1/messages", json=careless, timeout=DEADLINE)
    assert answer.status_code == 400 and "budget_tokens" in answer.text
    assert httpx.post(engine_url + "/v1/messages", json=haiku.wire.with_output_cap(haiku.body, 4096),
                      timeout=DEADLINE).status_code == 200
