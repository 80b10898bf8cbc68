"""The one launcher of a client's CLI (conformance/clients/launch.py): which binary runs for a
release (the lookup order, and the message naming the env variable when a selected release has
none), the scratch environment, the command line with and without the shell kept away, and a run
killed at its deadline. Real files and processes: a scratch npm-style prefix whose
`node_modules/.bin/claude` is a script printing its version (no CLI needed)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conformance.clients import GENERIC
from conformance.clients.config import MINIMAL, Settings
from conformance.clients.launch import (
    SAFE_PATH,
    ClientNotFound,
    Prepared,
    describe_environment,
    find_binary,
    find_release_binary,
    prepare,
    release_env,
    run,
)
from conformance.clients.profiles.claude_code import CLAUDE_CODE
from conformance.clients.profiles.codex import CODEX
from conformance.clients.profiles.opencode import OPENCODE
from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from tests.clients.fake_cli import fake_prefix


def test_release_env_names_the_version_with_underscores():
    assert release_env("2.1.197") == "CONFORMANCE_CLIENTS_DIR_2_1_197"
    assert release_env("0.171.0-alpha.1") == "CONFORMANCE_CLIENTS_DIR_0_171_0_alpha_1"


def test_each_release_from_its_own_env_variable(clean_env, tmp_path):
    old, new = fake_prefix(tmp_path / "old", "2.1.197"), fake_prefix(tmp_path / "new", "2.1.332")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(old))
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_332", str(new))
    assert find_release_binary(CLAUDE_CODE, "2.1.197") == old / "node_modules/.bin/claude"
    assert find_release_binary(CLAUDE_CODE, "2.1.332") == new / "node_modules/.bin/claude"


def test_fallback_to_the_shared_dir_and_its_release_prefixes(clean_env, tmp_path):
    shared = fake_prefix(tmp_path / "clients", "2.1.332")  # the current pins at the top, as .ci/run does
    fake_prefix(shared / "claude-code@2.1.197", "2.1.197")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR", str(shared))
    assert find_release_binary(CLAUDE_CODE, "2.1.197") == shared / "claude-code@2.1.197/node_modules/.bin/claude"
    assert find_release_binary(CLAUDE_CODE, "2.1.332") == shared / "node_modules/.bin/claude"


def test_the_default_binary_only_when_it_is_that_release(clean_env, tmp_path):
    exe = fake_prefix(tmp_path / "one", "2.1.332") / "node_modules/.bin/claude"
    clean_env.setenv("CONFORMANCE_CLAUDE_BIN", str(exe))
    assert find_release_binary(CLAUDE_CODE, "2.1.332") == exe
    with pytest.raises(ClientNotFound) as e:
        find_release_binary(CLAUDE_CODE, "2.1.197")
    assert "CONFORMANCE_CLIENTS_DIR_2_1_197" in str(e.value) and f"{exe} is 2.1.332" in str(e.value)
    assert "npm install --prefix DIR @anthropic-ai/claude-code@2.1.197" in str(e.value)


def test_a_prefix_of_the_wrong_release_or_without_the_cli_is_refused(clean_env, tmp_path):
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(fake_prefix(tmp_path / "p", "2.1.332")))
    with pytest.raises(ClientNotFound, match="is release 2.1.332, not 2.1.197"):
        find_release_binary(CLAUDE_CODE, "2.1.197")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(tmp_path / "empty"))
    with pytest.raises(ClientNotFound, match=r"not an executable file \(from CONFORMANCE_CLIENTS_DIR_2_1_197="):
        find_release_binary(CLAUDE_CODE, "2.1.197")


def test_find_binary_takes_the_path_then_the_env_variable_then_path(clean_env, tmp_path):
    exe = fake_prefix(tmp_path / "a", "2.1.332") / "node_modules/.bin/claude"
    assert find_binary(CLAUDE_CODE, exe) == exe
    assert find_binary(CLAUDE_CODE, exe.parent) == exe  # a folder holding the binary
    clean_env.setenv("CONFORMANCE_CLAUDE_BIN", str(exe))
    assert find_binary(CLAUDE_CODE) == exe
    clean_env.delenv("CONFORMANCE_CLAUDE_BIN")
    with pytest.raises(ClientNotFound, match=r"npm install --prefix DIR @anthropic-ai/claude-code.*"
                                             r"CONFORMANCE_CLAUDE_BIN=DIR/node_modules/.bin/claude"):
        find_binary(CLAUDE_CODE)
    clean_env.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    assert find_binary(CLAUDE_CODE) == exe
    with pytest.raises(ValueError, match="cannot run other's CLI"):
        find_binary(GENERIC)


def _prepare(client, tmp_path, wire, **settings) -> Prepared:
    return prepare(client, tmp_path / "bin" / client.binary, wire=wire, prompt="do it", base_url="http://proxy:1",
                   api_key="sk-fake", root=tmp_path / "run", settings=Settings(**settings))


def test_the_scratch_environment_is_offline_and_inside_the_run_folder(tmp_path):
    p = _prepare(CLAUDE_CODE, tmp_path, ANTHROPIC, model="m")
    home = tmp_path / "run" / "home"
    assert p.env["PATH"] == SAFE_PATH and p.env["HOME"] == str(home) and p.env["TMPDIR"] == str(home / "tmp")
    assert all(p.env[k].startswith(str(home)) for k in p.env if k.startswith("XDG_"))
    assert (home / "tmp").is_dir() and p.project == tmp_path / "run" / "project" and p.project.is_dir()
    assert p.env["ANTHROPIC_BASE_URL"] == "http://proxy:1" and p.env["ANTHROPIC_API_KEY"] == "sk-fake"
    assert p.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and p.env["DISABLE_AUTOUPDATER"] == "1"
    assert not any(v == os.environ.get("HOME") for v in p.env.values())
    described = describe_environment(CLAUDE_CODE)
    assert "ANTHROPIC_BASE_URL=<proxy>" in described and "DISABLE_AUTOUPDATER=1" in described


def test_claude_code_live_runs_keep_the_shell_away_and_the_recapture_records_defaults(tmp_path):
    live = _prepare(CLAUDE_CODE, tmp_path / "live", ANTHROPIC, model="reference-model")
    assert live.argv[1:] == ["-p", "do it", "--output-format", "json", "--permission-mode", "acceptEdits",
                             "--disallowedTools", "Bash", "--model", "reference-model"]
    assert live.shown[0] == "claude" and not (live.project / "opencode.json").exists()
    recorded = _prepare(CLAUDE_CODE, tmp_path / "rec", ANTHROPIC, forbid_shell=False, flags=("--effort", "max"))
    assert recorded.shown == ["claude", "-p", "do it", "--output-format", "json", "--effort", "max"]


def test_opencode_names_the_provider_of_the_wire_and_denies_the_shell_in_live_runs(tmp_path):
    for wire, package in ((CHAT, "@ai-sdk/openai-compatible"), (ANTHROPIC, "@ai-sdk/anthropic")):
        p = _prepare(OPENCODE, tmp_path / wire.name, wire, model="reference-model")
        assert p.argv[1:] == ["run", "do it"]
        config = json.loads((p.project / "opencode.json").read_text())
        provider = config["provider"]["local"]
        assert provider["npm"] == package and provider["options"] == {"baseURL": "http://proxy:1/v1",
                                                                       "apiKey": "sk-fake"}
        assert config["model"] == "local/reference-model" and config["permission"] == {"bash": "deny",
                                                                                       "webfetch": "deny"}
        assert p.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1" and p.env["XDG_CONFIG_HOME"].startswith(str(p.home))
    recorded = _prepare(OPENCODE, tmp_path / "rec", CHAT, forbid_shell=False, model_options={"options": {"x": 1}})
    config = json.loads((recorded.project / "opencode.json").read_text())
    assert "permission" not in config and config["provider"]["local"]["models"] == {"local-model": {"options": {"x": 1}}}


def test_codex_runs_sandboxed_with_writes_only_in_the_project(tmp_path):
    p = _prepare(CODEX, tmp_path, RESPONSES, forbid_shell=False, catalog=MINIMAL)
    argv = p.argv
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    for setting in ('approval_policy="never"', "sandbox_workspace_write.network_access=false",
                    "sandbox_workspace_write.exclude_slash_tmp=true",
                    "sandbox_workspace_write.exclude_tmpdir_env_var=true"):
        assert setting in argv
    assert "--dangerously-bypass-approvals-and-sandbox" not in argv
    assert argv[-3:] == ["--cd", str(p.project), "do it"] and p.shown[-3:] == ["--cd", "<project>", "do it"]
    codex_home = Path(p.env["CODEX_HOME"])
    assert codex_home == p.home / ".codex" and p.env["CONFORMANCE_CODEX_KEY"] == "sk-fake"
    odd = prepare(CODEX, tmp_path / "codex", wire=RESPONSES, prompt="write {project} and {model}", base_url="http://p",
                  api_key="k", root=tmp_path / "odd", settings=Settings(catalog=None))
    assert odd.argv[-1] == "write {project} and {model}"  # placeholders are whole arguments
    catalog = json.loads((codex_home / "model-catalog.json").read_text())["models"][0]
    assert catalog["slug"] == "local-model" and catalog["apply_patch_tool_type"] == "freeform"
    assert "--ephemeral" in argv and (codex_home / "config.toml").is_file()


def test_a_run_past_its_deadline_is_killed_with_its_process_group(tmp_path):
    marker = tmp_path / "child-survived"
    script = f"(sleep 3; touch {marker}) & sleep 30"
    prepared = Prepared(["/bin/sh", "-c", script], ["sh"], {"PATH": SAFE_PATH}, tmp_path, tmp_path)
    start = time.monotonic()
    finished = run(prepared, deadline=1.0)
    assert finished.timed_out and finished.returncode != 0 and time.monotonic() - start < 10
    time.sleep(3)
    assert not marker.exists(), "a child of the killed CLI outlived it"
    done = run(Prepared(["/bin/sh", "-c", "echo out; echo err >&2"], ["sh"], {"PATH": SAFE_PATH}, tmp_path,
                        tmp_path), deadline=10)
    assert (done.returncode, done.stdout, done.stderr, done.timed_out) == (0, "out\n", "err\n", False)
