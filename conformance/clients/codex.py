"""Codex CLI (npm `@openai/codex`): the OpenAI Responses API only, for custom providers.

Facts measured on 0.171.0 against a loopback server (WIRE.md, docs/loop.md): User-Agent
`<originator>/<version> (<os>; <arch>) <terminal>` with the originator `codex_exec` (exec mode),
`codex_cli_rs` (the TUI) or another `codex_*` front end, and an `originator` header; the
`<environment_context>` user message names `<cwd><dir></cwd>`; identifiers in the
`x-codex-turn-metadata` JSON header, `x-codex-window-id` and the body's `client_metadata`.
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identity, register_profile
from conformance.wire import RESPONSES

CODEX = register_profile(ClientProfile(
    name="codex",
    display="Codex CLI",
    wires=(RESPONSES,),
    identity=Identity(
        user_agents=(re.compile(r"^codex_[a-z_]+/(\d[\w.\-]*)"),),
        tool_names=frozenset({"exec_command", "apply_patch", "write_stdin", "request_user_input", "view_image"}),
    ),
    persona=persona.CODEX,
    pin="0.171.0",
    releases=("0.171.0",),
    npm_package="@openai/codex",
    binary="codex",
    binary_env="CONFORMANCE_CODEX_BIN",
    native_binary=("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
                   "node_modules/.bin/codex"),
    working_directory=(re.compile(r"<cwd>(/[^<>\n]+)</cwd>"),),
    loop_tools=("exec_command", "apply_patch"),
    tool_choice="auto",
    redact_headers=("x-client-request-id", "session-id", "thread-id"),
    redact_fields=frozenset({"installation_id", "x-codex-installation-id", "session_id", "thread_id", "turn_id",
                             "root_turn_id", "context_window_id", "parent_thread_id", "window_id",
                             "x-codex-window-id"}),
))
