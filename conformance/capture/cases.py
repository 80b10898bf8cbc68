"""The recapture's cases: what the bundled corpus (`captured/<client>/<version>/<case>.json`) records
of each client, as data (`conformance.capture.recapture` runs them).

Rules:
- A case names its client (a profile), the wire it speaks (opencode's provider package follows the
  wire), the prompt, what it covers, and what it changes from the client's defaults: command-line
  flags, environment, the opencode model entry, and for Codex the model catalog (MINIMAL for the
  freeform apply_patch, else none), `web_search` and an attached MCP server. The recapture records
  defaults, so no case keeps the shell away (`Settings.forbid_shell` is False); Codex's own sandbox
  confines its commands.
- The seeded values are fixed (not drawn), so a recapture diffs empty against the corpus.
- The MCP server of the namespace-call case is `conformance/capture/codex_mcp.py` (read only,
  confined to the scratch project), offered by Codex as the namespace `mcp__files`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.clients import CLAUDE_CODE, CODEX, OPENCODE
from conformance.clients.config import MINIMAL, McpServer, Settings
from conformance.clients.profile import ClientProfile
from conformance.core.paths import fixtures_dir
from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.dialect import Dialect

WRITE_FILE_TOKEN = "5c0ffee1d2a3"  # the seeded token of the write-file scenario
EDIT_FILE_OWNER = "maplewood"  # the seeded owner of the edit-file scenario
NAMESPACE_READ_TOKEN = "d00dfeed4242"  # the seeded code of the namespace-read scenario
MCP_SERVER = Path(__file__).with_name("codex_mcp.py")
FILES_SERVER = McpServer("files", sys.executable, (str(MCP_SERVER), "{project}"), ("read_file",))
# what a capture's meta shows of it: no path of the machine that recorded it
FILES_SERVER_SHOWN = McpServer("files", "<python>", ("<conformance>/capture/codex_mcp.py", "{project}"), ("read_file",))


@dataclass
class Case:
    client: ClientProfile
    case: str
    prompt: str
    description: str
    covers: list[str]
    wire: Dialect
    flags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    min_model_requests: int = 1
    seed: dict[str, str] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)  # opencode: the model's entry
    catalog: str | None = None  # Codex: MINIMAL for the freeform apply_patch
    web_search: str | None = None  # Codex
    mcp_server: McpServer | None = None  # Codex

    @property
    def id(self) -> str:
        return f"{self.client.name}/{self.case}"

    def settings(self) -> Settings:
        """The launcher's settings of this case (module rules: the client's defaults, shell kept)."""
        return Settings(forbid_shell=False, flags=tuple(self.flags), env=dict(self.env),
                        model_options=dict(self.model_options), catalog=self.catalog, web_search=self.web_search,
                        mcp_server=self.mcp_server)

    def shown_settings(self) -> Settings:
        """The settings as a capture's meta records them (no machine paths)."""
        shown = FILES_SERVER_SHOWN if self.mcp_server is FILES_SERVER else self.mcp_server
        return dataclasses.replace(self.settings(), mcp_server=shown)


def scenario_prompt(scenario_id: str) -> str:
    return json.loads((fixtures_dir() / "scenarios" / f"{scenario_id}.json").read_text())["prompt"]


def _claude_code_cases(plain: str, write_static: str, write_file: str) -> list[Case]:
    loop = ["--permission-mode", "acceptEdits"]

    def case(name: str, prompt: str, description: str, covers: list[str], **kw: Any) -> Case:
        return Case(CLAUDE_CODE, name, prompt, description, covers, ANTHROPIC, **kw)

    return [
        case("default", plain, "print mode, default settings",
             ["adaptive-thinking", "effort-high", "context-management", "system-role-in-messages", "head-probe",
              "metadata-user-id-json", "session-id-header"]),
        case("effort-xhigh", plain, "--effort xhigh: the effort is sent verbatim", ["effort-xhigh", "adaptive-thinking"],
             flags=["--effort", "xhigh"]),
        case("effort-max", plain, "--effort max", ["effort-max", "adaptive-thinking"], flags=["--effort", "max"]),
        case("haiku", plain, "a haiku-class model: thinking enabled with a budget",
             ["thinking-enabled-budget", "haiku-class-model"], flags=["--model", "claude-haiku-4-5-20251001"]),
        case("thinking-off", plain, "MAX_THINKING_TOKENS=0: thinking disabled, no context_management",
             ["thinking-disabled", "no-context-management"], env={"MAX_THINKING_TOKENS": "0"}),
        case("custom-model", plain, "a custom (local) model name: 32000 max_tokens, still adaptive",
             ["custom-model-name", "adaptive-thinking"], flags=["--model", "my-local-model"]),
        case("bare", plain, "--bare: the minimal tool set and system prompt", ["bare-mode", "few-tools"],
             flags=["--bare"]),
        case("tool-loop", write_static, "a tool loop: Write, then the final answer (both turns; scenario write-static)",
             ["tool-loop", "tool-result", "write-tool", "scenario:write-static"], flags=loop, min_model_requests=2),
        case("tool-loop-thinking", write_file,
             "a loop with thinking: Read with a thinking block, Write, answer; thinking and signature are sent "
             "back verbatim (scenario write-file)",
             ["tool-loop", "thinking-signature-sent-back", "read-tool", "write-tool", "scenario:write-file"],
             flags=loop, min_model_requests=3, seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
        case("count-tokens", "/context",
             "interactive /context (driven in print mode): a burst of /v1/messages/count_tokens requests",
             ["count-tokens"], min_model_requests=1),
    ]


def _opencode_cases(write_static: str) -> list[Case]:
    def case(name: str, wire: Dialect, prompt: str, description: str, covers: list[str], **kw: Any) -> Case:
        return Case(OPENCODE, name, prompt, description, covers, wire, **kw)

    return [
        case("openai-plain", CHAT, "hello", "OpenAI-compatible provider, a one-word prompt; the title request runs "
             "concurrently", ["openai-compatible", "title-request", "stream-options-include-usage", "session-headers"]),
        case("openai-spaces", CHAT, "say hello in five words", "a prompt with spaces: sent wrapped in literal double "
             "quotes", ["prompt-quoted", "title-request"]),
        case("openai-inner-quotes", CHAT, 'reply with the word "ok" and nothing else',
             "a prompt with inner quotes (wrapped in quotes again on the wire)",
             ["prompt-quoted", "inner-quotes", "title-request"]),
        case("openai-tool-loop", CHAT, write_static,
             "OpenAI-compatible tool loop: write, then the answer; the result goes back as role tool",
             ["tool-loop", "role-tool", "title-request", "scenario:write-static"], min_model_requests=3),
        case("anthropic-plain", ANTHROPIC, "hello", "Anthropic provider, plain prompt",
             ["anthropic-provider", "eager-input-streaming", "title-request-thinking"]),
        case("anthropic-tool-loop", ANTHROPIC, write_static, "Anthropic provider tool loop",
             ["anthropic-provider", "tool-loop", "tool-result", "scenario:write-static"], min_model_requests=3),
        case("anthropic-reasoning", ANTHROPIC, "hello",
             "Anthropic provider with a reasoning model config (thinking enabled with a budget)",
             ["anthropic-provider", "thinking-enabled-budget"],
             model_options={"options": {"thinking": {"type": "enabled", "budgetTokens": 8000}}}),
    ]


def _codex_cases(plain: str) -> list[Case]:
    def case(name: str, prompt: str, description: str, covers: list[str], **kw: Any) -> Case:
        return Case(CODEX, name, prompt, description, covers, RESPONSES, **kw)

    return [
        case("plain", plain, "exec mode, default config: one turn, plain answer; hosted web_search offered, "
             "reasoning summary auto with encrypted content included",
             ["responses-wire", "store-false", "include-encrypted-reasoning", "reasoning-summary-auto",
              "namespace-tools", "hosted-web-search", "prompt-cache-key", "client-metadata"]),
        case("exec-loop", scenario_prompt("write-file"),
             "an exec_command tool loop: cat the seeded token, write it through the shell, answer (scenario "
             "write-file; no apply_patch offered)",
             ["tool-loop", "exec-command", "function-call-output", "scenario:write-file"],
             min_model_requests=3, seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
        case("apply-patch-loop", scenario_prompt("edit-file"),
             "an apply_patch edit loop with the freeform tool (model catalog apply_patch_tool_type freeform): cat, "
             "a custom_tool_call patch, answer (scenario edit-file)",
             ["tool-loop", "custom-tool", "apply-patch-freeform", "custom-tool-call-output", "scenario:edit-file"],
             min_model_requests=3, seed={"settings.conf": f"owner={EDIT_FILE_OWNER}\nmode=draft\nlevel=3\n"},
             catalog=MINIMAL),
        case("multi-turn-reasoning", scenario_prompt("sum-numbers"),
             "a multi-turn loop whose later requests send back reasoning items with encrypted_content and "
             "function_call_output items (store false; scenario sum-numbers, freeform apply_patch)",
             ["tool-loop", "reasoning-sent-back", "encrypted-content-sent-back", "function-call-output",
              "store-false", "scenario:sum-numbers"],
             min_model_requests=3, seed={"numbers.txt": "101\n202\n303\n404\n505\n606\n"}, catalog=MINIMAL),
        case("namespace-call", scenario_prompt("namespace-read"),
             "a call of a tool inside a namespace: a stdio MCP server attached in config.toml is offered as the "
             "namespace mcp__files; read_file through it, write through the shell, answer (scenario "
             "namespace-read)",
             ["tool-loop", "namespace-call", "mcp-server", "scenario:namespace-read"],
             min_model_requests=3, seed={"code.txt": f"code={NAMESPACE_READ_TOKEN}\n"}, mcp_server=FILES_SERVER),
        case("no-web-search", plain, 'web_search = "disabled" in config.toml: no hosted tool in the request',
             ["web-search-disabled", "responses-wire"], web_search="disabled"),
    ]


def cases() -> list[Case]:
    """Every case of the bundled corpus, Claude Code's first, then opencode's, then Codex's."""
    plain = "Reply with one short sentence about tidy code."
    write_static, write_file = scenario_prompt("write-static"), scenario_prompt("write-file")
    return [*_claude_code_cases(plain, write_static, write_file), *_opencode_cases(write_static),
            *_codex_cases(plain)]
