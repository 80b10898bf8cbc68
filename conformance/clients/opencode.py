"""opencode (npm `opencode-ai`): OpenAI chat completions (`@ai-sdk/openai-compatible`) or
Anthropic Messages (`@ai-sdk/anthropic`).

Facts measured on 1.18.33 against a loopback server (docs/wire-facts.md, docs/loop.md): User-Agent
`opencode/<version> ai-sdk/...`; `opencode run` wraps a prompt with spaces in literal double
quotes; the system text names `Working directory: <dir>`. Its provider is the project's
`opencode.json` (the AI SDK package chosen by the wire); offline it needs
`OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1` and HOME and XDG_* in a scratch
folder. `permission: {bash: deny, webfetch: deny}` drops the shell tool from the request.
Identifiers: `x-session-id`, `x-session-affinity`, `x-opencode-session` (`ses_...` ids, which also
appear in text).
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
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
    native_binary="node_modules/opencode-ai/bin/opencode.exe",
    launch=Launch(
        argv=("run", "{options}", "{prompt}"),
        env={"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"},
        config="opencode.json",
        no_shell_config={"permission": {"bash": "deny", "webfetch": "deny"}},
        providers={CHAT.name: "@ai-sdk/openai-compatible", ANTHROPIC.name: "@ai-sdk/anthropic"},
    ),
    working_directory=(re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE),),
    identifiers=Identifiers(headers=("x-session-id", "x-session-affinity", "x-opencode-session"),
                            text=(re.compile(r"\bses_[0-9A-Za-z]{16,40}\b"),)),
    quotes_prompt=True,
    tool_choice="auto",
    max_tokens={"": None},  # its provider package chooses the value: read from its captures
))
