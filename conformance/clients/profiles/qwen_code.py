"""Qwen Code (npm `@qwen-code/qwen-code`): OpenAI chat completions by default, the Responses API
with `--auth-type openai-responses`, Anthropic Messages with `--auth-type anthropic`.

Facts measured on 0.24.4 against a loopback server: User-Agent `QwenCode/<version> (<os>; <arch>)`
on chat and Responses; in Anthropic mode it borrows Claude Code's `claude-cli/<version> (external,
cli)` (its own version number) and `x-app: cli`, so it is told apart by its body: the system prompt
opens with `You are Qwen Code` and it offers `read_file`, `write_file`, `run_shell_command`,
`grep_search` (none of Claude Code's tool names). It names its folder in a `<system-reminder>` user
text, `I'm currently working in the directory: <dir>`. After a plain answer it sends a second
request, the "managed memory extraction" subagent, with the conversation so far. On the Responses
wire its `prompt_cache_key` is `qwen-code:<uuid>`. Anthropic mode sends thinking `enabled` with
`budget_tokens` equal to `max_tokens` (32000) and the beta `interleaved-thinking-2025-05-14`
unless settings.json sets a budget (`model.generationConfig.reasoning.budget_tokens`).

Running it: the base URL, key and model from `OPENAI_BASE_URL` / `OPENAI_API_KEY` / `OPENAI_MODEL`
(or the `ANTHROPIC_` ones in Anthropic mode), a scratch HOME whose `.qwen/settings.json` turns off
usage statistics, telemetry and auto-update. It warns that it wants Node >= 22 and runs on 20; its
bundled ripgrep may be refused (EACCES) and it falls back to its own grep. Without approval it
offers only read-only tools: `--yolo` adds `write_file`, `edit` and `run_shell_command`,
`--approval-mode auto-edit` the file tools alone (live runs: no shell on the host). Its write tool
wants an absolute path.
"""

import re

from conformance.clients.config import QWEN_SETTINGS
from conformance.clients.persona import Persona, bind
from conformance.clients.profile import ClientProfile, Identifiers, Identity, Launch, register_profile
from conformance.clients.recapture_case import PLAIN_PROMPT, RecaptureCase
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

PERSONA = Persona("generic", {
    "read_file": bind("read", path="file_path", offset="offset", limit="limit"),
    "write_file": bind("write", path="file_path", content="content"),
    "edit": bind("edit", path="file_path", old="old_string", new="new_string", all="replace_all"),
    "run_shell_command": bind("shell", command="command", cwd="directory"),
    "glob": bind("glob", pattern="pattern", path="path"),
    "grep_search": bind("grep", pattern="pattern", path="path", include="glob"),
})

LOOP_FLAGS = ("--yolo",)  # offers write_file, edit and run_shell_command without asking
QUOTED_PROMPT = 'Reply with the word "ok" and nothing else.'
# Anthropic mode's default budget equals max_tokens; the corpus's Anthropic cases set one below it.
ANTHROPIC_BUDGET = {"model": {"generationConfig": {"reasoning": {"budget_tokens": 8000}}}}
OPENAI_ENV = {"OPENAI_BASE_URL": "{base_url}/v1", "OPENAI_API_KEY": "{api_key}", "OPENAI_MODEL": "{model}"}


def _cases(prefix: str, wire, note: str, model_options=None) -> tuple[RecaptureCase, ...]:
    options = dict(model_options or {})
    covers = (f"{wire.name}-wire",)
    return (
        RecaptureCase(f"{prefix}-plain", f"{note}, a plain answer, then the memory-extraction request",
                      (*covers, "memory-extraction-request"), prompt=PLAIN_PROMPT, wire=wire, model_options=options),
        RecaptureCase(f"{prefix}-tool-loop", f"{note}, --yolo: write_file with an absolute path, then the answer "
                      "(scenario write-static)", (*covers, "tool-loop", "write-file-absolute", "scenario:write-static"),
                      scenario="write-static", wire=wire, flags=LOOP_FLAGS, min_model_requests=2,
                      model_options=options),
        RecaptureCase(f"{prefix}-quoted", f"{note}, a prompt with inner quotes (sent as typed)",
                      (*covers, "inner-quotes"), prompt=QUOTED_PROMPT, wire=wire, model_options=options),
    )


RECAPTURE = (
    *_cases("openai", CHAT, "OpenAI chat (the default auth type)"),
    *_cases("responses", RESPONSES, "--auth-type openai-responses"),
    *_cases("anthropic", ANTHROPIC, "--auth-type anthropic with a thinking budget of 8000 in settings.json",
            ANTHROPIC_BUDGET),
)

QWEN_CODE = register_profile(ClientProfile(
    name="qwen-code",
    display="Qwen Code",
    wires=(CHAT, RESPONSES, ANTHROPIC),
    identity=Identity(
        user_agents=(re.compile(r"^QwenCode/(\d[\w.\-]*)"),),
        system_marks=("You are Qwen Code",),
        borrowed_user_agents=(re.compile(r"^claude-cli/(\d[\w.\-]*) \(external, cli\)"),),
        tool_names=frozenset({"read_file", "write_file", "run_shell_command", "grep_search", "tool_search",
                              "tool_call", "get_goal", "update_goal", "list_agents", "skill", "agent"}),
    ),
    persona=PERSONA,
    pin="0.24.4",
    releases=("0.24.4",),
    npm_package="@qwen-code/qwen-code",
    binary="qwen",
    binary_env="CONFORMANCE_QWEN_BIN",
    launch=Launch(
        argv=("{options}", "{prompt}"),
        env={"QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
        config=QWEN_SETTINGS,
        no_shell_argv=("--approval-mode", "auto-edit"),
        wire_argv={CHAT.name: ("--auth-type", "openai"), RESPONSES.name: ("--auth-type", "openai-responses"),
                   ANTHROPIC.name: ("--auth-type", "anthropic")},
        wire_env={CHAT.name: OPENAI_ENV, RESPONSES.name: OPENAI_ENV,
                  ANTHROPIC.name: {"ANTHROPIC_BASE_URL": "{base_url}", "ANTHROPIC_API_KEY": "{api_key}",
                                   "ANTHROPIC_MODEL": "{model}"}},
    ),
    working_directory=(re.compile(r"I'm currently working in the directory:\s*(/[^\s\"\\<>]+)"),),
    identifiers=Identifiers(body_values=("prompt_cache_key",)),
    max_tokens={"": 32000},
    recapture=RECAPTURE,
))
