"""Load checks: concurrency acceptance, interference and long-context parallelism.

Rules:
- `load.concurrency_acceptance` is the verdict of the concurrency ramp (1, 2, 4, ... N requests in
  flight, every stream judged by the suite's exchange checks). It fails naming the level at which
  the target broke and what broke there (5xx, dropped stream, malformed events, deadline, the
  engine process gone); the underlying exchange violations travel with it.
- Throughput and latency figures are `info`: these machines are shared, so figures are relative
  (ratios within one run), never pass/fail thresholds.
- `load.soak_stable` is the verdict of the soak (`conformance.probes.soak`): N agent sessions
  sharing one system prompt and tool set replay multi-turn loops for a fixed duration; it fails
  when any request fails or any stream is malformed, naming the time of the first failure and
  whether the target recovered by itself afterwards.
- Every id here is a probe verdict (scope `probe`) that judges the serving stack (`stack`): whether
  it accepts, streams and schedules requests under load. Registered here (one module owns the
  rule), referred to by the constants below; built by `conformance.probes.load` and
  `conformance.probes.interference`.
"""

from __future__ import annotations

from conformance.core.registry import register

CONCURRENCY_ACCEPTANCE = "load.concurrency_acceptance"
THROUGHPUT = "load.throughput"
INTERFERENCE = "load.interference"
LONG_CONTEXT_PARALLEL = "load.long_context_parallel"
SOAK_STABLE = "load.soak_stable"

register(
    CONCURRENCY_ACCEPTANCE,
    "requests run N at a time (and as a ramp 1, 2, 4 .. N) are all accepted and stream well-formed",
    description=(
        "The captured requests and scenario first turns run N at a time and as a ramp 1, 2, 4, ... N; "
        "every exchange is judged with the suite's exchange checks. A target that works alone but "
        "breaks under load fails, naming the level and what broke."
    ),
    likely_cause=(
        "the engine cannot serve this many requests in flight (scheduler/KV-cache exhaustion, a "
        "speculative-decoding or batching bug, out-of-memory kill); lower the router's concurrency "
        "limit or fix the engine"
    ),
    scope="probe",
    judges="stack",
)
register(
    THROUGHPUT,
    "aggregate output tokens/s and time-to-first-token p50/p95 per concurrency level (figures)",
    severity="info",
    scope="probe",
    judges="stack",
)
register(
    INTERFERENCE,
    "short-request latency and throughput with one long-context request in flight, as a ratio (figures)",
    severity="info",
    likely_cause="a long prefill on a shared engine stalls the short requests (no chunked prefill)",
    scope="probe",
    judges="stack",
)
register(
    LONG_CONTEXT_PARALLEL,
    "several long-context requests at once all complete (latency ratio vs one alone reported)",
    likely_cause="the KV cache cannot hold several long contexts: the engine fails or preempts instead of queueing",
    scope="probe",
    judges="stack",
)
register(
    SOAK_STABLE,
    "N agent sessions sharing a prefix, replayed for a fixed duration: no request fails, no stream is malformed",
    description=(
        "Concurrent agent sessions replay multi-turn loops that share the system prompt and tools (realistic "
        "prefix reuse), restarting until the duration ends; every exchange is judged. A target that passes a "
        "short ramp but fails after minutes of sustained load fails here, naming the time of the first failure "
        "and whether one request after the soak shows it recovered by itself."
    ),
    likely_cause=(
        "the engine degrades or dies under sustained concurrent load with prefix reuse (a speculative-decoding "
        "or KV-cache bug, a memory leak, a worker crash the server does not restart)"
    ),
    scope="probe",
    judges="stack",
)
