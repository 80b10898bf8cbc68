"""conformance: an agent-loop conformance test suite for LLM serving stacks.

Replays real captured Claude Code and opencode requests through a router and an engine and
asserts what an agent needs: the request is accepted, the stream is well-formed to the last
event, tool calls arrive structured and fit their schemas, and the multi-turn loop completes.
"""

__version__ = "0.1.0"
