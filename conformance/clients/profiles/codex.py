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
Persona: measured on 0.171.0, docs/loop.md.
"""

import re

from conformance.clients.config import MINIMAL
from conformance.clients.persona import Persona, bind, tool_key
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.clients.recapture_case import (
    EDIT_FILE_OWNER,
    NAMESPACE_READ_TOKEN,
    PLAIN_PROMPT,
    WRITE_FILE_TOKEN,
    RecaptureCase,
)
from conformance.wire import RESPONSES

SANDBOX_ARGV = ("--sandbox", "workspace-write",
                "-c", 'approval_policy="never"',
                "-c", "sandbox_workspace_write.network_access=false",
                "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
                "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true")

PERSONA = Persona("codex", {
    "exec_command": bind("shell", command="cmd", cwd="workdir"),
    "apply_patch": bind("patch", input="input"),
    tool_key("read_file", "mcp__files"): bind("read_file", path="path"),
}, read_before_write=False)

RECAPTURE = (
    RecaptureCase("plain", "exec mode, default config: one turn, plain answer; hosted web_search offered, reasoning "
                  "summary auto with encrypted content included",
                  ("responses-wire", "store-false", "include-encrypted-reasoning", "reasoning-summary-auto",
                   "namespace-tools", "hosted-web-search", "prompt-cache-key", "client-metadata"), prompt=PLAIN_PROMPT),
    RecaptureCase("exec-loop", "an exec_command tool loop: cat the seeded token, write it through the shell, answer "
                  "(scenario write-file; no apply_patch offered)",
                  ("tool-loop", "exec-command", "function-call-output", "scenario:write-file"), scenario="write-file",
                  min_model_requests=3, seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
    RecaptureCase("apply-patch-loop", "an apply_patch edit loop with the freeform tool (model catalog "
                  "apply_patch_tool_type freeform): cat, a custom_tool_call patch, answer (scenario edit-file)",
                  ("tool-loop", "custom-tool", "apply-patch-freeform", "custom-tool-call-output", "scenario:edit-file"),
                  scenario="edit-file", min_model_requests=3,
                  seed={"settings.conf": f"owner={EDIT_FILE_OWNER}\nmode=draft\nlevel=3\n"}, catalog=MINIMAL),
    RecaptureCase("multi-turn-reasoning", "a multi-turn loop whose later requests send back reasoning items with "
                  "encrypted_content and function_call_output items (store false; scenario sum-numbers, freeform "
                  "apply_patch)",
                  ("tool-loop", "reasoning-sent-back", "encrypted-content-sent-back", "function-call-output",
                   "store-false", "scenario:sum-numbers"), scenario="sum-numbers",
                  min_model_requests=3, seed={"numbers.txt": "101\n202\n303\n404\n505\n606\n"}, catalog=MINIMAL),
    RecaptureCase("namespace-call", "a call of a tool inside a namespace: a stdio MCP server attached in config.toml "
                  "is offered as the namespace mcp__files; read_file through it, write through the shell, answer "
                  "(scenario namespace-read)",
                  ("tool-loop", "namespace-call", "mcp-server", "scenario:namespace-read"), scenario="namespace-read",
                  min_model_requests=3, seed={"code.txt": f"code={NAMESPACE_READ_TOKEN}\n"}, mcp_server="files"),
    RecaptureCase("no-web-search", 'web_search = "disabled" in config.toml: no hosted tool in the request',
                  ("web-search-disabled", "responses-wire"), prompt=PLAIN_PROMPT, web_search="disabled"),
)

CODEX = register_profile(ClientProfile(
    name="codex",
    display="Codex CLI",
    wires=(RESPONSES,),
    identity=Identity(
        user_agents=(re.compile(r"^codex_[a-z_]+/(\d[\w.\-]*)"),),
        tool_names=frozenset({"exec_command", "apply_patch", "write_stdin", "request_user_input", "view_image"}),
    ),
    persona=PERSONA,
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
    recapture=RECAPTURE,
))
