"""opencode (npm `opencode-ai`): OpenAI chat completions (`@ai-sdk/openai-compatible`) or
Anthropic Messages (`@ai-sdk/anthropic`).

Facts measured on 1.18.33 against a loopback server (WIRE.md, docs/loop.md): User-Agent
`opencode/<version> ai-sdk/...`; `opencode run` wraps a prompt with spaces in literal double
quotes; the system text names `Working directory: <dir>`.
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identity, register_profile
from conformance.wire import ANTHROPIC, CHAT

OPENCODE = register_profile(ClientProfile(
    name="opencode",
    display="opencode",
    wires=(CHAT, ANTHROPIC),
    identity=Identity(
        user_agents=(re.compile(r"\bopencode/(\d[\w.\-]*)"),),
        tool_names=frozenset({"read", "write", "edit", "bash", "glob", "grep", "todowrite", "webfetch"}),
    ),
    persona=persona.OPENCODE,
    pin="1.18.33",
    releases=("1.18.33",),
    npm_package="opencode-ai",
    binary="opencode",
    binary_env="CONFORMANCE_OPENCODE_BIN",
    native_binary=("node_modules/opencode-ai/bin/opencode.exe", "node_modules/.bin/opencode"),
    working_directory=(re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE),),
    redact_headers=("x-session-id", "x-session-affinity", "x-opencode-session"),
    quotes_prompt=True,
    tool_choice="auto",
    extra={"providers": {CHAT.name: "@ai-sdk/openai-compatible", ANTHROPIC.name: "@ai-sdk/anthropic"}},
))
