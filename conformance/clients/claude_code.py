"""Claude Code (npm `@anthropic-ai/claude-code`): Anthropic Messages.

Facts measured on 2.1.197 and 2.1.332 against a loopback server (WIRE.md, docs/loop.md):
User-Agent `claude-cli/<version> (external, <entrypoint>)`, `x-app: cli`; every request's first
system block is `x-anthropic-billing-header: cc_version=<version>...`; the system text names
`Primary working directory: <dir>`.
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identity, register_profile
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
    native_binary=("node_modules/@anthropic-ai/claude-code/bin/claude.exe", "node_modules/.bin/claude"),
    working_directory=(re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE),),
    redact_headers=("x-claude-code-session-id",),
))
