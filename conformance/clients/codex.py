"""Codex CLI (npm `@openai/codex`): the OpenAI Responses API only, for custom providers.

Facts measured on 0.171.0 against a loopback server (docs/wire-facts.md, docs/loop.md): User-Agent
`<originator>/<version> (<os>; <arch>) <terminal>` with the originator `codex_exec` (exec mode),
`codex_cli_rs` (the TUI) or another `codex_*` front end, and an `originator` header; the
`<environment_context>` user message names `<cwd><dir></cwd>`; identifiers in the
`x-codex-turn-metadata` JSON header (and the same JSON inside the body's `client_metadata`),
`x-codex-window-id` (`<uuid>:<n>`), `session-id`, `thread-id`, `x-client-request-id` and the body's
`prompt_cache_key`.

Running it: `codex exec` with `CODEX_HOME` in the scratch HOME, whose `config.toml` names one
custom provider (`wire_api = "responses"`, the key from an env variable); `--ephemeral` keeps no
session files. Every command the model runs goes through Codex's own sandbox (bubblewrap):
`--sandbox workspace-write` with `/tmp`, `$TMPDIR` and the network excluded, so writes land only
in the project folder (measured: a write to `/tmp` fails with "Read-only file system"), and
`approval_policy="never"`, so a refused command fails back to the model instead of escalating.
"""

import re

from conformance.clients import persona
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.wire import RESPONSES

SANDBOX_ARGV = ("--sandbox", "workspace-write",
                "-c", 'approval_policy="never"',
                "-c", "sandbox_workspace_write.network_access=false",
                "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
                "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true")

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
    native_binary="node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    launch=Launch(
        argv=("exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", *SANDBOX_ARGV, "{options}",
              "--cd", "{project}", "{prompt}"),
        api_key_env="CONFORMANCE_CODEX_KEY",
        home_dirs={"CODEX_HOME": ".codex"},
        config="codex config.toml",
    ),
    working_directory=(re.compile(r"<cwd>(/[^<>\n]+)</cwd>"),),
    loop_tools=("exec_command", "apply_patch"),
    tool_choice="auto",
    identifiers=Identifiers(
        headers=("x-client-request-id", "session-id", "thread-id", "x-codex-window-id"),
        json_headers=("x-codex-turn-metadata",),
        fields=frozenset({"installation_id", "x-codex-installation-id", "session_id", "thread_id", "turn_id",
                          "root_turn_id", "context_window_id", "parent_thread_id", "window_id", "x-codex-window-id"}),
        body_objects=("client_metadata",),
        body_values=("prompt_cache_key",),
    ),
))
