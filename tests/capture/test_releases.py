"""The corpus across releases: which release a run replays, the test keys, the manifest's
`current`, `--version` on the recapture entry point and `conformance baseline migrate`.

- The bundled corpus holds Claude Code 2.1.197 and 2.1.332 and opencode 1.18.33; the manifest
  marks 2.1.332, 1.18.33 (and Codex 0.171.0) current and a default run replays only those.
- Keys are client/case; only a run with two releases of one client puts the release in them.
- The peer fixtures were re-keyed from release keys by `conformance baseline migrate` (the
  copy of ccr-engine.json as it was before, in data/, re-keys to the committed fixture).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.capture import recapture
from conformance.capture.corpus import load_captures
from conformance.capture.format import save_capture
from conformance.cli import main
from conformance.clients.launch import release_prefix
from conformance.clients.profile import launchable
from conformance.clients.profiles.claude_code import CLAUDE_CODE
from conformance.core.paths import captured_dir, fixtures_dir
from conformance.report.baseline import migrate_key
from conformance.suite.cases import capture_key, current_releases, select_releases

CORPUS = captured_dir()
DATA = Path(__file__).resolve().parent / "data"
CAPS = [c for c in load_captures(CORPUS) if c.main_exchanges()]


def _releases(caps):
    return sorted({(c.client, c.client_version) for c in caps})


def test_the_manifest_marks_the_current_release_of_each_client():
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    assert manifest["current"] == {"claude-code": "2.1.332", "codex": "0.171.0", "opencode": "1.18.33",
                                   "qwen-code": "0.24.4"}
    assert manifest["current"] == current_releases(CORPUS, CAPS)
    assert {("claude-code", "2.1.197"), ("claude-code", "2.1.332"), ("opencode", "1.18.33")} <= set(_releases(CAPS))
    assert {p.name: p.pin for p in launchable()} == manifest["current"]
    for client in launchable():
        assert client.pin in client.releases
        for version in client.releases:
            assert (CORPUS / client.name / version).is_dir()
    assert recapture.current_of([("claude-code", "2.1.197"), ("claude-code", "2.1.332"), ("opencode", "9.9.9"),
                                 ("opencode", "10.0.0")]) == {"claude-code": "2.1.332", "opencode": "10.0.0"}


def test_a_default_run_replays_the_current_releases_with_release_free_keys():
    chosen = select_releases(CAPS, "current", current_releases(CORPUS, CAPS))
    assert _releases(chosen) == [("claude-code", "2.1.332"), ("codex", "0.171.0"), ("opencode", "1.18.33"),
                                   ("qwen-code", "0.24.4")]
    keys = [capture_key(c, chosen) for c in chosen]
    assert "claude-code/default" in keys and "opencode/openai-plain" in keys
    assert len(set(keys)) == len(keys)


def test_one_release_by_version_keeps_the_other_clients_current():
    chosen = select_releases(CAPS, "2.1.197", current_releases(CORPUS, CAPS))
    assert _releases(chosen) == [("claude-code", "2.1.197"), ("codex", "0.171.0"), ("opencode", "1.18.33"),
                                   ("qwen-code", "0.24.4")]
    assert "claude-code/default" in {capture_key(c, chosen) for c in chosen}


def test_all_releases_put_the_release_in_the_keys_of_a_client_with_two():
    chosen = select_releases(CAPS, "all", current_releases(CORPUS, CAPS))
    keys = {capture_key(c, chosen) for c in chosen}
    assert {"claude-code/2.1.197/default", "claude-code/2.1.332/default", "opencode/openai-plain"} <= keys
    assert len(keys) == len(chosen)


def test_an_unknown_release_is_a_usage_error_naming_the_ones_there_are():
    with pytest.raises(pytest.UsageError, match=r"9\.9\.9.*claude-code 2\.1\.197"):
        select_releases(CAPS, "9.9.9", current_releases(CORPUS, CAPS))


def test_recapture_version_option_and_release_prefixes(tmp_path):
    assert recapture.parse_versions(["2.1.197"], ["claude-code"]) == {"claude-code": "2.1.197"}
    assert recapture.parse_versions(["claude-code=2.1.197"], ["claude-code", "opencode"]) == {"claude-code": "2.1.197"}
    with pytest.raises(SystemExit, match="CLIENT=V"):
        recapture.parse_versions(["2.1.197"], ["claude-code", "opencode"])
    with pytest.raises(SystemExit, match="unknown client 'crush'"):
        recapture.parse_versions(["crush=0.24.4"], ["claude-code"])
    assert release_prefix(tmp_path, CLAUDE_CODE, "2.1.197") == tmp_path / "claude-code@2.1.197"
    # a release prefix that holds no binary falls back to DIR itself; a missing binary says how to install
    assert recapture.client_dir(tmp_path, CLAUDE_CODE, "2.1.197") == tmp_path
    with pytest.raises(FileNotFoundError, match=r"npm install --prefix .*claude-code@2\.1\.197"):
        recapture.client_info(tmp_path, CLAUDE_CODE, "2.1.197")


def test_baseline_migrate_rekeys_the_release_keys_of_a_peer_fixture(tmp_path, capsys):
    old = tmp_path / "ccr-engine.json"
    shutil.copy(DATA / "baseline-2.1.197" / "ccr-engine.json", old)
    assert "claude-code/2.1.197/" in old.read_text()
    assert main(["baseline", "migrate", str(old)]) == 0
    assert "re-keyed; measured on claude-code 2.1.197, opencode 1.18.33" in capsys.readouterr().out
    # what the peer fixture was when it was re-keyed (the live fixture has been re-measured since)
    assert json.loads(old.read_text()) == json.loads((DATA / "baseline-2.1.197" / "ccr-engine.migrated.json").read_text())
    assert migrate_key("test_replay.py::test_replay[claude-code/2.1.197/default]") == (
        "test_replay.py::test_replay[claude-code/default]", ("claude-code", "2.1.197"))
    assert migrate_key("test_protocol.py::test_error_envelope[anthropic]") == (
        "test_protocol.py::test_error_envelope[anthropic]", None)


def test_no_peer_fixture_keeps_a_release_in_its_keys():
    for path in sorted((fixtures_dir() / "peers").glob("*.json")):
        doc = json.loads(path.read_text())
        for entry in doc.get("known_failures", []):
            assert migrate_key(entry["test"])[1] is None, (path.name, entry["test"])


def test_the_manifest_leaves_out_json_that_is_not_a_capture(tmp_path):
    """A scratch HOME kept under the output folder holds the client's own JSON: not a capture."""
    src = next(CORPUS.glob("claude-code/2.1.332/*.json"))
    (tmp_path / "claude-code" / "2.1.332").mkdir(parents=True)
    shutil.copy(src, tmp_path / "claude-code" / "2.1.332" / src.name)
    (tmp_path / "scratch" / "home").mkdir(parents=True)
    (tmp_path / "scratch" / "home" / "state.json").write_text('{"usage-rows-queued": "x"}')
    manifest = json.loads(recapture.write_manifest(tmp_path).read_text())
    assert [c["file"] for c in manifest["cases"]] == [f"claude-code/2.1.332/{src.name}"]


def test_unknown_client_keys_carry_the_file_name_and_a_content_hash(tmp_path):
    """Two unknown-client captures with one case name: ids from file and content, never a number."""
    src = next(c for c in CAPS if c.client == "opencode" and c.case == "openai-plain")
    for name, prompt in (("a.json", "first"), ("b.json", "second")):
        cap = load_captures(src.path)[0]
        cap.client, cap.client_version, cap.case = "other", "unknown", "plain"
        cap.exchanges[0].request.body["messages"][-1]["content"] = prompt
        save_capture(cap, tmp_path / name)
    caps = load_captures(tmp_path)
    keys = [capture_key(c, caps) for c in caps]
    assert [k.split("-")[0] for k in keys] == ["other/plain@a", "other/plain@b"], keys
    assert keys == [capture_key(c, load_captures(tmp_path)) for c in load_captures(tmp_path)], "stable across loads"
    alone = load_captures(tmp_path / "a.json")
    assert capture_key(alone[0], alone) == keys[0], "the same id whatever else the corpus holds"
    known = [c for c in CAPS if c.client == "opencode"]
    assert "@" not in capture_key(known[0], known), "a known client's unique key stays client/case"
