"""The reference router: a small Anthropic Messages -> OpenAI chat-completions translating router.

Rules:
- It is a test double of a ROUTER (LiteLLM's `/v1/messages` adapter, claude-code-router): it
  serves Anthropic `/v1/messages` (+ `count_tokens`) and forwards to an upstream engine, either
  translated to OpenAI chat completions (`upstream_api="openai"`, the default: the lossy path
  most deployments run) or passed through to the upstream's own `/v1/messages`
  (`upstream_api="anthropic"`, routing only).
- Correct by default. Router-side faults are switched on by name (`faults.ROUTER_FAULTS`), each
  reproducing one row of the fault catalog (docs/faults.md) that real routers shipped.
- It shares no code with the judge: it never imports conformance.wire.sse / protocols / schemas /
  checks (a test enforces this), so a bug in the judge cannot hide the same bug here.
- Modules: `faults` (names), `translate` (the request, Anthropic -> chat), `translate_answer`
  (the answer back, whole or streamed), `events` (response-side faults, SSE out and in),
  `server` (the aiohttp app), `launch` (in-thread and subprocess launchers).
"""
