"""Load, context-edge and reasoning probes: the failures that hide from a single request.

Modules: `load` (concurrency acceptance ramp, throughput) with `workload` (what it sends) and
`client_load` (its own ceiling), `interference` (long-context cost to short requests, long
requests in parallel), `limit` (the one context-limit discovery), `haystack` (filler text and the
needle), `sizing` (requests sized by the target's own counts, the needle sweep), `context` (the
context verdicts: limit, needle recall, over-limit refusal, advertised vs accepted, usable agent
context), `reasoning` (answer before max_tokens, output caps), `phases` (prefill and decode
figures), `repeat` (repeat-to-confirm, rerun-plugin refusal), `progress` (progress lines),
`common` (target, judging, token counts), `suite_support` (glue for conformance/suite/test_{load,
context,reasoning,perf}.py). Check ids: conformance/checks/{load,context,reasoning,phases}.py.
See docs/probes.md.
"""
