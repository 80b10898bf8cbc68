"""Peer stacks: the conformance suite run through real routers (LiteLLM, claude-code-router) and
real engines (llama.cpp, vLLM) with a real small model. Entry: `.ci/peers/run-all`; docs/peers.md.
"""
