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
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.wire import ANTHROPIC

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
    persona=persona.CLAUDE_CODE,
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
))
