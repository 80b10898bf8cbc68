"""Load, context-edge and reasoning probes: the failures that hide from a single request.

Modules: `load` (concurrency acceptance ramp, throughput), `interference` (long-context cost to
short requests, long requests in parallel), `context` (limit, needle recall, over-limit refusal,
advertised vs accepted, usable agent context), `reasoning` (answer before max_tokens, output
caps), `repeat` (repeat-to-confirm, rerun-plugin refusal), `common` (target, judging, token
counts), `suite_support` (glue for conformance/suite/test_{load,context,reasoning}.py).
See docs/probes.md.
"""
