"""The config files a client's CLI needs for one run, as the profile's `Launch.config` names them,
and the run's `Settings` (`conformance.clients.launch`). Standard library only.

Rules:
- `opencode.json` (in the project): one provider `local` whose AI SDK package is the wire's
  (`Launch.providers`), baseURL `<base>/v1` and the key; the model `local/<model>` whose entry is
  the run's `model_options`; `autoupdate: false`, `share: "disabled"`; with `forbid_shell` the
  profile's `no_shell_config` on top (bash and webfetch denied: bash then leaves the tool list).
- Codex's `config.toml` (in CODEX_HOME): the model, one provider `local` (`wire_api = "responses"`,
  base URL `<base>/v1`, `env_key` the profile's key variable, no request or stream retries, so a
  failure is recorded once), update checks and analytics off; `web_search` when the run sets it,
  `model_catalog_json` when the run has a catalog, `[mcp_servers.<name>]` when it attaches one.
- Codex's model catalog (`Settings.catalog`): BUNDLED, for live runs, is the binary's own entry
  (`codex debug models`: the last one using unified exec, preferring one without code-mode-only
  tools) renamed to the run's model, with the freeform apply_patch — the instructions and tools a
  local-model user gets; MINIMAL, for the recapture's cases that need the freeform apply_patch,
  is the one-entry catalog the corpus was recorded with; None records Codex with no catalog (the
  recapture's other cases: Codex's defaults for an unknown model).
- Qwen Code's `settings.json` (in `<HOME>/.qwen`): usage statistics, telemetry and auto-update
  off (QWEN_OFFLINE), with the run's `model_options` merged on top (a reasoning budget); the base
  URL, key and model come from its per-wire variables (`Launch.wire_env`).
- A run with no model names LOCAL_MODEL in a config file; on a command line it names none (the
  client's own default).
- `config_preview` is what a capture's meta records of the config: the same builders, with
  placeholders for the per-run URL, key and paths.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.clients.profile import ClientProfile
from conformance.wire.dialect import Dialect

BUNDLED = "bundled"
MINIMAL = "minimal"
LOCAL_MODEL = "local-model"
PROVIDER = "local"  # the provider's name in opencode.json and config.toml
OPENCODE_JSON = "opencode.json"
CODEX_TOML = "codex config.toml"
QWEN_SETTINGS = "qwen settings.json"
# Qwen Code's settings that keep it offline and quiet (docs/loop.md)
QWEN_OFFLINE: dict[str, Any] = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                                "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}
CATALOG_FILE = "model-catalog.json"
_PREVIEW_URL = "http://127.0.0.1:PORT"


@dataclass(frozen=True)
class McpServer:
    """A stdio MCP server attached to a run (Codex's `[mcp_servers.<name>]`). Its tools are
    approved without asking, so the server must confine itself."""

    name: str
    command: str
    args: tuple[str, ...]  # `{project}` is replaced by the project folder
    tools: tuple[str, ...]


@dataclass(frozen=True)
class Settings:
    """What one run changes from the client's defaults (module rules of `conformance.clients.launch`)."""

    model: str | None = None
    forbid_shell: bool = True  # live runs: True; the recapture records defaults: False
    flags: tuple[str, ...] = ()  # extra command-line flags
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment (MAX_THINKING_TOKENS=0)
    model_options: Mapping[str, Any] = field(default_factory=dict)  # opencode: the model's entry
    catalog: str | None = BUNDLED  # Codex: BUNDLED (live), MINIMAL or None (recapture)
    web_search: str | None = None  # Codex: config.toml's web_search ("disabled")
    mcp_server: McpServer | None = None


def opencode_config(client: ClientProfile, wire: Dialect, *, base_url: str, api_key: str,
                    settings: Settings) -> dict[str, Any]:
    """The project's opencode.json: one provider pointing at `base_url` (module rules)."""
    model = settings.model or LOCAL_MODEL
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {PROVIDER: {"npm": client.launch.providers[wire.name], "name": PROVIDER,
                                "options": {"baseURL": base_url.rstrip("/") + "/v1", "apiKey": api_key},
                                "models": {model: dict(settings.model_options)}}},
        "model": f"{PROVIDER}/{model}",
        "autoupdate": False,
        "share": "disabled",
    }
    if settings.forbid_shell:
        config.update(client.launch.no_shell_config)
    return config


def _toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string or list of strings is valid TOML


def codex_config(*, base_url: str, model: str, key_env: str, catalog_path: str | None = None,
                 web_search: str | None = None, mcp: McpServer | None = None, project: str = "") -> str:
    """CODEX_HOME/config.toml (module rules)."""
    lines = [f"model = {_toml(model)}", f"model_provider = {_toml(PROVIDER)}", "check_for_update_on_startup = false"]
    if web_search:
        lines.append(f"web_search = {_toml(web_search)}")
    if catalog_path:
        lines.append(f"model_catalog_json = {_toml(catalog_path)}")
    lines += ["", "[analytics]", "enabled = false", "", f"[model_providers.{PROVIDER}]", f"name = {_toml(PROVIDER)}",
              f"base_url = {_toml(base_url.rstrip('/') + '/v1')}", 'wire_api = "responses"',
              f"env_key = {_toml(key_env)}", "request_max_retries = 0", "stream_max_retries = 0"]
    if mcp:
        args = [a.replace("{project}", project) for a in mcp.args]
        lines += ["", f"[mcp_servers.{mcp.name}]", f"command = {_toml(mcp.command)}", f"args = {_toml(args)}",
                  f"enabled_tools = {_toml(list(mcp.tools))}", 'default_tools_approval_mode = "approve"']
    return "\n".join(lines) + "\n"


def minimal_catalog(model: str) -> dict[str, Any]:
    """A one-model catalog for a local model: just what makes Codex treat it as known, with the
    freeform apply_patch (the entry the corpus was recorded with)."""
    return {"models": [{
        "slug": model, "display_name": model, "description": "a local model behind a custom provider",
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


def bundled_catalog(binary: Path, env: dict[str, str], model: str, timeout: float = 30) -> dict[str, Any]:
    """A catalog with one entry for `model`: the binary's own (module rules). RuntimeError when the
    binary cannot list its catalog."""
    out = subprocess.run([str(binary), "debug", "models"], capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL, env=env)
    try:
        models = json.loads(out.stdout)["models"]
    except (ValueError, KeyError, TypeError):
        raise RuntimeError(f"`{binary} debug models` gave no catalog (exit {out.returncode}): "
                           f"{(out.stderr or out.stdout)[-300:]}; this Codex release may predate model catalogs "
                           "(model_catalog_json)") from None
    usable = [m for m in models if isinstance(m, dict) and m.get("shell_type") == "unified_exec"] or models
    plain = [m for m in usable if not m.get("tool_mode")] or usable
    entry = dict(plain[-1])
    entry.update({"slug": model, "display_name": model, "apply_patch_tool_type": "freeform", "visibility": "list"})
    entry.pop("upgrade", None)
    return {"models": [entry]}


def _merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out


def qwen_settings(settings: Settings) -> dict[str, Any]:
    """Qwen Code's `~/.qwen/settings.json` (module rules)."""
    return _merged(QWEN_OFFLINE, settings.model_options)


def write_config(client: ClientProfile, binary: Path, *, wire: Dialect, env: dict[str, str], project: Path,
                 base_url: str, api_key: str, settings: Settings) -> None:
    """Write the config files the profile's `Launch.config` names (module rules)."""
    kind = client.launch.config
    if kind == OPENCODE_JSON:
        config = opencode_config(client, wire, base_url=base_url, api_key=api_key, settings=settings)
        (project / OPENCODE_JSON).write_text(json.dumps(config, indent=1))
    elif kind == CODEX_TOML:
        codex_home = Path(env["CODEX_HOME"])
        model = settings.model or LOCAL_MODEL
        catalog = None
        if settings.catalog:
            catalog = codex_home / CATALOG_FILE
            entries = bundled_catalog(binary, env, model) if settings.catalog == BUNDLED else minimal_catalog(model)
            catalog.write_text(json.dumps(entries, indent=1))
        (codex_home / "config.toml").write_text(codex_config(
            base_url=base_url, model=model, key_env=client.launch.api_key_env,
            catalog_path=str(catalog) if catalog else None, web_search=settings.web_search, mcp=settings.mcp_server,
            project=str(project)))
    elif kind == QWEN_SETTINGS:
        folder = Path(env["HOME"]) / ".qwen"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.json").write_text(json.dumps(qwen_settings(settings), indent=1))
    elif kind:
        raise ValueError(f"{client.name}: no writer for the config file {kind!r}")


def config_preview(client: ClientProfile, wire: Dialect, settings: Settings) -> dict[str, Any]:
    """What a capture's meta records of the run's config (module rules), keyed as the corpus keys it."""
    kind = client.launch.config if client.launch else ""
    if kind == OPENCODE_JSON:
        return {"opencode_config": opencode_config(client, wire, base_url=_PREVIEW_URL, api_key="<redacted:api-key>",
                                                   settings=settings)}
    if kind == QWEN_SETTINGS:
        return {"qwen_settings": qwen_settings(settings)}
    if kind != CODEX_TOML:
        return {}
    catalog = f"<CODEX_HOME>/{CATALOG_FILE}" if settings.catalog else None
    out: dict[str, Any] = {"codex_config": codex_config(
        base_url=_PREVIEW_URL, model=settings.model or LOCAL_MODEL, key_env=client.launch.api_key_env,
        catalog_path=catalog, web_search=settings.web_search, mcp=settings.mcp_server, project="<project>")}
    if settings.catalog == MINIMAL:
        entry = minimal_catalog(settings.model or LOCAL_MODEL)["models"][0]
        out["model_catalog_entry"] = {k: v for k, v in entry.items()
                                      if k in ("slug", "apply_patch_tool_type", "shell_type")}
    return out
