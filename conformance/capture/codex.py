"""Codex CLI in the recapture: its pin, its cases, and the scratch CODEX_HOME it runs in.

Rules:
- Codex speaks only the Responses API to a custom provider: `config.toml` names one provider
  `local` with `wire_api = "responses"`, `base_url = <proxy>/v1` and `env_key` naming the variable
  that holds the fake key (WIRE.md, "OpenAI Responses API and Codex CLI").
- Everything Codex writes stays in the case's scratch folder: `HOME` and `CODEX_HOME` point there,
  the project folder is the working root (`--cd`), `--ephemeral` keeps no session files.
- Model tool calls never touch the host outside the scratch project folder: Codex's own sandbox
  runs every command (`--sandbox workspace-write`, the bundled bubblewrap) with writes limited to
  the project folder (`/tmp` and `$TMPDIR` excluded, no network), and `approval_policy = "never"`
  means a command the sandbox refuses fails back to the model instead of asking to escalate. The
  only upstream is the recording proxy in front of the reference engine, whose scripted commands
  are `cat`, `ls`, `printf` and apply_patch edits of the seeded files.
- Analytics and update checks are off, so the run makes no outside connection attempt.
- `apply_patch` is a freeform custom tool only when the model catalog entry says so
  (`apply_patch_tool_type: "freeform"`), which is how people configure local models: such a case
  writes a one-entry `model_catalog_json` whose `slug` is the model name.
- A case with `mcp_files` attaches a stdio MCP server (`codex_mcp.py`, read-only, confined to the
  scratch project), which Codex offers as the namespace tool `mcp__files`: the corpus's real
  namespaced call (scenario namespace-read).
- The recapture module (`conformance.capture.recapture`) owns the run loop; this module gives it
  Codex's data (`NAME`, `PIN`, `NPM_PACKAGE`, `BINARY`, `case_specs()`), the command line
  (`argv`), and the scratch set-up (`prepare`).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

NAME = "codex"
PIN = "0.171.0"
NPM_PACKAGE = "@openai/codex"
# The native binary the npm launcher runs (the manifest's sha256 is of this file), and the launcher.
BINARY = ("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
          "node_modules/.bin/codex")
MODEL = "local-model"
KEY_ENV = "CONFORMANCE_CODEX_KEY"
PROVIDER = "responses"
# The fixed seed of the edit-file scenario's variable (diff-stable across recaptures).
EDIT_FILE_OWNER = "maplewood"
WRITE_FILE_TOKEN = "5c0ffee1d2a3"
NAMESPACE_READ_TOKEN = "d00dfeed4242"
MCP_SERVER = Path(__file__).with_name("codex_mcp.py")

ENVIRONMENT = ("HOME and CODEX_HOME=<scratch> <KEY_ENV>=<fake>, CODEX_HOME/config.toml with the provider (see each "
               "case's meta.codex_config); codex exec --sandbox workspace-write, approval_policy never, stdin "
               "/dev/null")

SANDBOX_FLAGS = [
    "--sandbox", "workspace-write",
    "-c", 'approval_policy="never"',
    "-c", "sandbox_workspace_write.network_access=false",
    "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
    "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
]


def _scenario_prompt(scenario_id: str) -> str:
    from conformance.core.paths import fixtures_dir

    return json.loads((fixtures_dir() / "scenarios" / f"{scenario_id}.json").read_text())["prompt"]


def case_specs() -> list[dict[str, Any]]:
    """Codex's cases as keyword arguments of the recapture's `Case` (options in `model_options`)."""
    plain = "Reply with one short sentence about tidy code."
    freeform = {"apply_patch_tool_type": "freeform"}
    return [
        dict(client=NAME, case="plain", prompt=plain, provider=PROVIDER,
             description="exec mode, default config: one turn, plain answer; hosted web_search offered, "
                         "reasoning summary auto with encrypted content included",
             covers=["responses-wire", "store-false", "include-encrypted-reasoning", "reasoning-summary-auto",
                     "namespace-tools", "hosted-web-search", "prompt-cache-key", "client-metadata"]),
        dict(client=NAME, case="exec-loop", prompt=_scenario_prompt("write-file"), provider=PROVIDER,
             description="an exec_command tool loop: cat the seeded token, write it through the shell, answer "
                         "(scenario write-file; no apply_patch offered)",
             covers=["tool-loop", "exec-command", "function-call-output", "scenario:write-file"],
             min_model_requests=3, seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
        dict(client=NAME, case="apply-patch-loop", prompt=_scenario_prompt("edit-file"), provider=PROVIDER,
             description="an apply_patch edit loop with the freeform tool (model catalog apply_patch_tool_type "
                         "freeform): cat, a custom_tool_call patch, answer (scenario edit-file)",
             covers=["tool-loop", "custom-tool", "apply-patch-freeform", "custom-tool-call-output",
                     "scenario:edit-file"],
             min_model_requests=3, seed={"settings.conf": f"owner={EDIT_FILE_OWNER}\nmode=draft\nlevel=3\n"},
             model_options=freeform),
        dict(client=NAME, case="multi-turn-reasoning", prompt=_scenario_prompt("sum-numbers"), provider=PROVIDER,
             description="a multi-turn loop whose later requests send back reasoning items with "
                         "encrypted_content and function_call_output items (store false; scenario sum-numbers, "
                         "freeform apply_patch)",
             covers=["tool-loop", "reasoning-sent-back", "encrypted-content-sent-back", "function-call-output",
                     "store-false", "scenario:sum-numbers"],
             min_model_requests=3, seed={"numbers.txt": "101\n202\n303\n404\n505\n606\n"},
             model_options=freeform),
        dict(client=NAME, case="namespace-call", prompt=_scenario_prompt("namespace-read"), provider=PROVIDER,
             description="a call of a tool inside a namespace: a stdio MCP server attached in config.toml is "
                         "offered as the namespace mcp__files; read_file through it, write through the shell, "
                         "answer (scenario namespace-read)",
             covers=["tool-loop", "namespace-call", "mcp-server", "scenario:namespace-read"],
             min_model_requests=3, seed={"code.txt": f"code={NAMESPACE_READ_TOKEN}\n"},
             model_options={"mcp_files": True}),
        dict(client=NAME, case="no-web-search", prompt=plain, provider=PROVIDER,
             description='web_search = "disabled" in config.toml: no hosted tool in the request',
             covers=["web-search-disabled", "responses-wire"], model_options={"web_search": "disabled"}),
    ]


def argv(case) -> list[str]:
    """The command line as recorded (the launcher path replaces `codex` when it runs)."""
    return ["codex", "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", *SANDBOX_FLAGS,
            *case.flags, case.prompt]


def model_catalog(slug: str) -> dict[str, Any]:
    """A one-model catalog for a local model: just what makes Codex treat it as known."""
    return {"models": [{
        "slug": slug, "display_name": slug, "description": "a local model behind a custom provider",
        "default_reasoning_level": "medium",
        "supported_reasoning_levels": [{"effort": "medium", "description": "default"}],
        "shell_type": "unified_exec", "visibility": "list", "supported_in_api": True, "priority": 1,
        "apply_patch_tool_type": "freeform", "web_search_tool_type": "text", "truncation_policy":
            {"mode": "tokens", "limit": 10000},
        "context_window": 128000, "effective_context_window_percent": 95, "input_modalities": ["text"],
        "experimental_supported_tools": [], "supports_reasoning_summaries": True,
        "default_reasoning_summary": "auto", "support_verbosity": False,
        "base_instructions": "You are a coding agent running against a local model.",
    }]}


def config_text(case, base_url: str, catalog_path: str | None, mcp: tuple[str, str, str] | None = None) -> str:
    """CODEX_HOME/config.toml for one case (`mcp`: the MCP server's python, script and root)."""
    options = case.model_options or {}
    lines = [
        f"model = {json.dumps(MODEL)}",
        'model_provider = "local"',
        "check_for_update_on_startup = false",
    ]
    if options.get("web_search"):
        lines.append(f"web_search = {json.dumps(options['web_search'])}")
    if catalog_path:
        lines.append(f"model_catalog_json = {json.dumps(catalog_path)}")
    lines += [
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[model_providers.local]",
        'name = "local"',
        f"base_url = {json.dumps(base_url + '/v1')}",
        'wire_api = "responses"',
        f"env_key = {json.dumps(KEY_ENV)}",
        "request_max_retries = 0",
        "stream_max_retries = 0",
    ]
    if mcp:
        python, script, root = mcp
        lines += ["", "[mcp_servers.files]", f"command = {json.dumps(python)}",
                  f"args = {json.dumps([script, root])}", 'enabled_tools = ["read_file"]',
                  # the server is read-only and confined to the project (codex_mcp.py): its one tool
                  # needs no approval, which `approval_policy = "never"` could not give
                  'default_tools_approval_mode = "approve"']
    return "\n".join(lines) + "\n"


def prepare(case, home: Path, project: Path, proxy_url: str, fake_key: str) -> tuple[dict[str, str], list[str]]:
    """Write the scratch CODEX_HOME for `case`; return (extra environment, argv after the binary)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    catalog = None
    if (case.model_options or {}).get("apply_patch_tool_type"):
        catalog = codex_home / "model-catalog.json"
        entry = model_catalog(MODEL)
        entry["models"][0]["apply_patch_tool_type"] = case.model_options["apply_patch_tool_type"]
        catalog.write_text(json.dumps(entry, indent=1))
    mcp = (sys.executable, str(MCP_SERVER), str(project)) if (case.model_options or {}).get("mcp_files") else None
    (codex_home / "config.toml").write_text(config_text(case, proxy_url, str(catalog) if catalog else None, mcp))
    env = {"CODEX_HOME": str(codex_home), KEY_ENV: fake_key}
    return env, [*argv(case)[1:-1], "--cd", str(project), case.prompt]


def meta(case) -> dict[str, Any]:
    """What a capture's meta records of the Codex set-up (placeholders for per-run paths)."""
    catalog = "<CODEX_HOME>/model-catalog.json" if (case.model_options or {}).get("apply_patch_tool_type") else None
    mcp = ("<python>", "<conformance>/capture/codex_mcp.py", "<project>") if (case.model_options or {}).get(
        "mcp_files") else None
    out: dict[str, Any] = {"codex_config": config_text(case, "http://127.0.0.1:PORT", catalog, mcp),
                           "sandbox": shlex.join(SANDBOX_FLAGS)}
    if catalog:
        out["model_catalog_entry"] = {k: v for k, v in model_catalog(MODEL)["models"][0].items()
                                      if k in ("slug", "apply_patch_tool_type", "shell_type")}
    return out
