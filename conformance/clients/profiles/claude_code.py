"""Claude Code (npm `@anthropic-ai/claude-code`): Anthropic Messages.

Facts measured on 2.1.197 and 2.1.332 against a loopback server (docs/wire-facts.md, docs/loop.md):
User-Agent `claude-cli/<version> (external, <entrypoint>)`, `x-app: cli`; every generation
request's first system block is `x-anthropic-billing-header: cc_version=<version>...`; the system
text names `Primary working directory: <dir>`. Offline it needs
`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1` (else DNS lookups and update
checks); `--output-format json` prints one JSON result line. `--permission-mode acceptEdits` alone
still runs shell commands it classes as edits inside the project (`touch f`, `echo hi > f`), so a
run that keeps the model's commands off the host also disallows Bash (it then offers Glob and Grep).
Identifiers: `X-Claude-Code-Session-Id` and `metadata.user_id` (a JSON string of device, account and
session ids in 2.x, `user_<hex>_account_<uuid>_session_<uuid>` in 1.x).
Persona: measured on 2.1.197 and 2.1.332 (Glob, Grep and LS from older releases), docs/loop.md.
"""

import re

from conformance.clients.persona import Persona, bind
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.clients.recapture_case import PLAIN_PROMPT, WRITE_FILE_TOKEN, RecaptureCase
from conformance.wire import ANTHROPIC

PERSONA = Persona("claude-code", {
    "Read": bind("read", path="file_path", offset="offset", limit="limit"),
    "Write": bind("write", path="file_path", content="content"),
    "Edit": bind("edit", path="file_path", old="old_string", new="new_string", all="replace_all"),
    "Bash": bind("shell", command="command"),
    "Glob": bind("glob", pattern="pattern", path="path"),
    "Grep": bind("grep", pattern="pattern", path="path", include="glob", mode="output_mode", ignore_case="-i"),
    "LS": bind("list", ("path",), path="path"),
})
LOOP_FLAGS = ("--permission-mode", "acceptEdits")  # the tool-loop cases let it write without asking

RECAPTURE = (
    RecaptureCase("default", "print mode, default settings",
                  ("adaptive-thinking", "effort-high", "context-management", "system-role-in-messages", "head-probe",
                   "metadata-user-id-json", "session-id-header"), prompt=PLAIN_PROMPT),
    RecaptureCase("effort-xhigh", "--effort xhigh: the effort is sent verbatim", ("effort-xhigh", "adaptive-thinking"),
                  prompt=PLAIN_PROMPT, flags=("--effort", "xhigh")),
    RecaptureCase("effort-max", "--effort max", ("effort-max", "adaptive-thinking"), prompt=PLAIN_PROMPT,
                  flags=("--effort", "max")),
    RecaptureCase("haiku", "a haiku-class model: thinking enabled with a budget",
                  ("thinking-enabled-budget", "haiku-class-model"), prompt=PLAIN_PROMPT,
                  flags=("--model", "claude-haiku-4-5-20251001")),
    RecaptureCase("thinking-off", "MAX_THINKING_TOKENS=0: thinking disabled, no context_management",
                  ("thinking-disabled", "no-context-management"), prompt=PLAIN_PROMPT, env={"MAX_THINKING_TOKENS": "0"}),
    RecaptureCase("custom-model", "a custom (local) model name: 32000 max_tokens, still adaptive",
                  ("custom-model-name", "adaptive-thinking"), prompt=PLAIN_PROMPT, flags=("--model", "my-local-model")),
    RecaptureCase("bare", "--bare: the minimal tool set and system prompt", ("bare-mode", "few-tools"),
                  prompt=PLAIN_PROMPT, flags=("--bare",)),
    RecaptureCase("tool-loop", "a tool loop: Write, then the final answer (both turns; scenario write-static)",
                  ("tool-loop", "tool-result", "write-tool", "scenario:write-static"), scenario="write-static",
                  flags=LOOP_FLAGS, min_model_requests=2),
    RecaptureCase("tool-loop-thinking",
                  "a loop with thinking: Read with a thinking block, Write, answer; thinking and signature are sent "
                  "back verbatim (scenario write-file)",
                  ("tool-loop", "thinking-signature-sent-back", "read-tool", "write-tool", "scenario:write-file"),
                  scenario="write-file", flags=LOOP_FLAGS, min_model_requests=3,
                  seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
    RecaptureCase("count-tokens",
                  "interactive /context (driven in print mode): a burst of /v1/messages/count_tokens requests",
                  ("count-tokens",), prompt="/context", min_model_requests=1),
)

CLAUDE_CODE = register_profile(ClientProfile(
    name="claude-code",
    display="Claude Code",
    wires=(ANTHROPIC,),
    identity=Identity(
        user_agents=(re.compile(r"claude-cli/(\d[\w.\-]*)"),),
        headers={"x-app": "cli"},
        system_marks=("x-anthropic-billing-header: cc_version=",),
        tool_names=frozenset({"Read", "Write", "Edit", "Bash", "ToolSearch", "NotebookEdit", "TaskCreate", "WebFetch"}),
    ),
    persona=PERSONA,
    pin="2.1.332",
    releases=("2.1.197", "2.1.332"),
    npm_package="@anthropic-ai/claude-code",
    binary="claude",
    binary_env="CONFORMANCE_CLAUDE_BIN",
    native_binary="node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    launch=Launch(
        argv=("-p", "{prompt}", "--output-format", "json", "{options}"),
        env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
             "DISABLE_ERROR_REPORTING": "1"},
        base_url_env="ANTHROPIC_BASE_URL",
        api_key_env="ANTHROPIC_API_KEY",
        model_argv=("--model", "{model}"),
        no_shell_argv=("--permission-mode", "acceptEdits", "--disallowedTools", "Bash"),
        json_result=True,
    ),
    working_directory=(re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE),),
    identifiers=Identifiers(headers=("x-claude-code-session-id",), packed=("metadata.user_id",)),
    max_tokens={"": 64000, "local model name": 32000},  # 32000 for unknown/local model names (docs/wire-facts.md)
    recapture=RECAPTURE,
))
