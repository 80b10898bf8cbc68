"""The reference engine: a deterministic, scripted LLM server that is strict and faithful to the wire.

Rules:
- It is a test double of an LLM *engine*. It shares no code with the judge: nothing here imports
  anything of the judge (`conformance.wire`, `conformance.checks`, `conformance.net`, ...)
  (tests/engine/test_independence.py enforces it as an allowlist). Only the standard library, aiohttp,
  `conformance.core.paths` (to find the bundled scenarios) and
  `conformance.engine.*`.
- Behaviour is deterministic: the same request gives the same bytes (ids are derived from the
  request), except for timestamps.
- Faults are switched on by name (`faults.FAULTS`); a fault changes only what it names.
- See docs/engine.md for endpoints, the tokenizer, limits and every fault.
"""
