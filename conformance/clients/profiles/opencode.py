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
Persona: measured on 1.18.33, docs/loop.md.
"""

import re

from conformance.clients.persona import Persona, bind
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.clients.recapture_case import RecaptureCase
from conformance.wire import ANTHROPIC, CHAT

PERSONA = Persona("opencode", {
    "read": bind("read", path="filePath", offset="offset", limit="limit"),
    "write": bind("write", path="filePath", content="content"),
    "edit": bind("edit", path="filePath", old="oldString", new="newString", all="replaceAll"),
    "bash": bind("shell", command="command", cwd="workdir"),
    "glob": bind("glob", pattern="pattern", path="path"),
    "grep": bind("grep", pattern="pattern", path="path", include="include"),
    "list": bind("list", path="path"),
})

RECAPTURE = (
    RecaptureCase("openai-plain", "OpenAI-compatible provider, a one-word prompt; the title request runs concurrently",
                  ("openai-compatible", "title-request", "stream-options-include-usage", "session-headers"),
                  prompt="hello", wire=CHAT),
    RecaptureCase("openai-spaces", "a prompt with spaces: sent wrapped in literal double quotes",
                  ("prompt-quoted", "title-request"), prompt="say hello in five words", wire=CHAT),
    RecaptureCase("openai-inner-quotes", "a prompt with inner quotes (wrapped in quotes again on the wire)",
                  ("prompt-quoted", "inner-quotes", "title-request"), prompt='reply with the word "ok" and nothing else',
                  wire=CHAT),
    RecaptureCase("openai-tool-loop", "OpenAI-compatible tool loop: write, then the answer; the result goes back as "
                  "role tool", ("tool-loop", "role-tool", "title-request", "scenario:write-static"),
                  scenario="write-static", wire=CHAT, min_model_requests=3),
    RecaptureCase("anthropic-plain", "Anthropic provider, plain prompt",
                  ("anthropic-provider", "eager-input-streaming", "title-request-thinking"), prompt="hello",
                  wire=ANTHROPIC),
    RecaptureCase("anthropic-tool-loop", "Anthropic provider tool loop",
                  ("anthropic-provider", "tool-loop", "tool-result", "scenario:write-static"), scenario="write-static",
                  wire=ANTHROPIC, min_model_requests=3),
    RecaptureCase("anthropic-reasoning",
                  "Anthropic provider with a reasoning model config (thinking enabled with a budget)",
                  ("anthropic-provider", "thinking-enabled-budget"), prompt="hello", wire=ANTHROPIC,
                  model_options={"options": {"thinking": {"type": "enabled", "budgetTokens": 8000}}}),
)

OPENCODE = register_profile(ClientProfile(
    name="opencode",
    display="opencode",
    wires=(CHAT, ANTHROPIC),
    identity=Identity(
        user_agents=(re.compile(r"\bopencode/(\d[\w.\-]*)"),),
        tool_names=frozenset({"read", "write", "edit", "bash", "glob", "grep", "todowrite", "webfetch"}),
    ),
    persona=PERSONA,
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
    recapture=RECAPTURE,
))
