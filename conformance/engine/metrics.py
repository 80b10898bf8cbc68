"""GET /metrics (opt-in, `serve_engine_in_thread(metrics=True)`): prefix-cache counters in vLLM's
Prometheus exposition, so a probe that reads a target's /metrics is tested on loopback.

Rules (facts: vLLM 0.32.0, vllm/v1/metrics/loggers.py registers the counters
`vllm:prefix_cache_queries` "in terms of number of queried tokens" and `vllm:prefix_cache_hits`
"in terms of number of cached tokens", labelled by engine index and model name; prometheus_client
exposes a counter as `<name>_total` with `# HELP` / `# TYPE` lines and a `<name>_created` sample):
- Every generation request that consults the prefix cache adds its prompt tokens to the queries
  counter and the tokens it read from the cache to the hits counter; under `prefix-cache-defeated`
  the queries grow and the hits do not (a vLLM started without prefix caching).
- The counters live on the engine's state; nothing else reads them.
- Off by default: a server without /metrics answers 404 there, as most do.
"""

from __future__ import annotations

import time

from aiohttp import web

from conformance.engine.state import STATE

QUERIES = "vllm:prefix_cache_queries"
HITS = "vllm:prefix_cache_hits"
_HELP = {QUERIES: "Prefix cache queries, in terms of number of queried tokens.",
         HITS: "Prefix cache hits, in terms of number of cached tokens."}


def _counters(state) -> dict:
    counters = vars(state).get("prefix_counters")
    if counters is None:
        counters = vars(state).setdefault("prefix_counters", {QUERIES: 0, HITS: 0, "created": time.time()})
    return counters


def record_prefix_query(state, queried: int, hit: int) -> None:
    """One request's prompt tokens looked up in the prefix cache, and how many were found."""
    counters = _counters(state)
    counters[QUERIES] += max(0, int(queried))
    counters[HITS] += max(0, int(hit))


def exposition(state) -> str:
    counters = _counters(state)
    labels = f'{{engine="0",model_name="{state.config.model}"}}'
    lines = []
    for name in (QUERIES, HITS):
        lines += [f"# HELP {name}_total {_HELP[name]}", f"# TYPE {name}_total counter",
                  f"{name}_total{labels} {float(counters[name])}",
                  f"# HELP {name}_created {_HELP[name]}", f"# TYPE {name}_created gauge",
                  f"{name}_created{labels} {counters['created']}"]
    return "\n".join(lines) + "\n"


async def metrics(request: web.Request):
    return web.Response(body=exposition(request.app[STATE]).encode(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})
