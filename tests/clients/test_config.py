"""The config files a client needs for one run (conformance/clients/config.py): Codex's
config.toml keeps it offline on a Responses provider, the bundled catalog entry is the binary's
own, and a capture's meta shows the config without a machine's paths or the key."""

from __future__ import annotations

import json
import stat
import tomllib

import pytest

from conformance.clients.config import (
    LOCAL_MODEL,
    MINIMAL,
    McpServer,
    Settings,
    bundled_catalog,
    codex_config,
    config_preview,
)
from conformance.clients.profiles.codex import CODEX
from conformance.clients.profiles.opencode import OPENCODE
from conformance.wire import CHAT, RESPONSES


def test_config_toml_names_a_responses_provider_and_keeps_codex_offline():
    doc = tomllib.loads(codex_config(base_url="http://127.0.0.1:9", model=LOCAL_MODEL, key_env="KEY"))
    assert doc["model_provider"] == "local" and doc["model"] == LOCAL_MODEL
    provider = doc["model_providers"]["local"]
    assert provider["wire_api"] == "responses" and provider["base_url"] == "http://127.0.0.1:9/v1"
    assert provider["env_key"] == "KEY"
    assert provider["request_max_retries"] == 0 and provider["stream_max_retries"] == 0
    assert doc["analytics"]["enabled"] is False and doc["check_for_update_on_startup"] is False
    assert "web_search" not in doc and "model_catalog_json" not in doc and "mcp_servers" not in doc
    off = tomllib.loads(codex_config(base_url="http://h", model="m", key_env="KEY", catalog_path="/x/cat.json",
                                     web_search="disabled"))
    assert off["web_search"] == "disabled" and off["model_catalog_json"] == "/x/cat.json"
    server = McpServer("files", "/usr/bin/python3", ("/srv/mcp.py", "{project}"), ("read_file",))
    mcp = tomllib.loads(codex_config(base_url="http://h", model="m", key_env="K", mcp=server, project="/p"))
    assert mcp["mcp_servers"]["files"] == {"command": "/usr/bin/python3", "args": ["/srv/mcp.py", "/p"],
                                           "enabled_tools": ["read_file"], "default_tools_approval_mode": "approve"}


def _fake_codex(tmp_path, models: list[dict]):
    exe = tmp_path / "codex"
    exe.write_text("#!/bin/sh\ncat <<'EOF'\n" + json.dumps({"models": models}) + "\nEOF\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_the_bundled_catalog_is_the_binarys_own_entry_renamed_with_the_freeform_patch(tmp_path):
    models = [{"slug": "gpt-a", "shell_type": "unified_exec", "tool_mode": "code", "base_instructions": "A"},
              {"slug": "gpt-b", "shell_type": "unified_exec", "base_instructions": "B", "upgrade": {"x": 1}},
              {"slug": "gpt-c", "shell_type": "local", "base_instructions": "C"}]
    (entry,) = bundled_catalog(_fake_codex(tmp_path, models), {"PATH": "/usr/bin:/bin"}, "mine")["models"]
    assert entry["base_instructions"] == "B" and entry["slug"] == entry["display_name"] == "mine"
    assert entry["apply_patch_tool_type"] == "freeform" and "upgrade" not in entry
    broken = tmp_path / "old"
    broken.mkdir()
    exe = broken / "codex"
    exe.write_text("#!/bin/sh\necho 'unknown command' >&2\nexit 2\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(RuntimeError, match="may predate model catalogs"):
        bundled_catalog(exe, {"PATH": "/usr/bin:/bin"}, "mine")


def test_a_captures_meta_shows_the_config_with_placeholders():
    shown = McpServer("files", "<python>", ("<conformance>/capture/codex_mcp.py", "{project}"), ("read_file",))
    meta = config_preview(CODEX, RESPONSES, Settings(forbid_shell=False, catalog=MINIMAL, mcp_server=shown))
    assert "http://127.0.0.1:PORT/v1" in meta["codex_config"] and "<CODEX_HOME>/model-catalog.json" in meta["codex_config"]
    assert '"<conformance>/capture/codex_mcp.py", "<project>"' in meta["codex_config"]
    assert meta["model_catalog_entry"] == {"slug": LOCAL_MODEL, "shell_type": "unified_exec",
                                           "apply_patch_tool_type": "freeform"}
    opencode = config_preview(OPENCODE, CHAT, Settings(forbid_shell=False))["opencode_config"]
    assert opencode["provider"]["local"]["options"]["apiKey"] == "<redacted:api-key>" and "permission" not in opencode
