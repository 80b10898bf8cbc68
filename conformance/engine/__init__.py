"""The reference engine: a deterministic, scripted LLM server that is strict and faithful to the wire.

Rules:
- It is a test double of an LLM *engine*. It shares no code with the judge: nothing here imports
  `conformance.sse`, `conformance.protocols`, `conformance.schemas` or `conformance.checks`
  (tests/engine/test_independence.py enforces it). Only the standard library, aiohttp and
  `conformance.engine.*`.
- Behaviour is deterministic: the same request gives the same bytes (ids are derived from the
  request), except for timestamps.
- Faults are switched on by name (`faults.FAULTS`); a fault changes only what it names.
- See docs/engine.md for endpoints, the tokenizer, limits and every fault.
"""
