"""A new client is one profile module, with no edit elsewhere: a toy client the suite has never
seen (its own User-Agent, its own tool names, no persona table, one recapture case) is written as
one module into a temporary folder added to the profiles package's path, found by the package's
own discovery, and then:
- identified from a request by its User-Agent, and by its tools alone (or behind a borrowed
  User-Agent);
- accepted by the suite's config as `--conformance-client toy-cli`;
- played in the sandbox by the persona the loop builds from its tools' shapes, reading and
  writing through its own argument names;
- listed by the recapture, which records its case through its CLI (a script standing in for the
  npm package) into `captured/toy-cli/<version>/` and the manifest;
- parametrized by the live tests, being launchable (it has a Launch); a profile without a Launch
  is identified but never launched, and holds no recapture case.
The module is unregistered afterwards."""

from __future__ import annotations

import dataclasses
import json
import stat
import sys
from pathlib import Path

import pytest

from conformance.capture.cases import cases
from conformance.capture.format import CapturedRequest, load_capture
from conformance.capture.recapture import main as recapture
from conformance.clients import PROFILES, profiles
from conformance.clients.identify import identify
from conformance.clients.launch import find_binary
from conformance.clients.profile import ClientProfile, launchable, profile, register_profile
from conformance.clients.recapture_case import RecaptureCase
from conformance.loop.driver import persona_for
from conformance.loop.sandbox import Sandbox
from conformance.loop.templates import Template
from conformance.loop.voices import GENERIC_VOICE
from conformance.suite import test_live as live_tests
from conformance.suite.config import ConfigError, SuiteConfig
from conformance.wire import CHAT

NAME, VERSION = "toy-cli", "0.3.1"
USER_AGENT = f"{NAME}/{VERSION} (linux; x64)"

# The whole of the new client: one profile module, exactly as it would sit in conformance/clients/profiles/.
MODULE = f'''"""Toy CLI (npm `toy-cli`): OpenAI chat completions; its User-Agent is `toy-cli/<version>`."""

import re

from conformance.clients.profile import ClientProfile, Identity, Launch, register_profile
from conformance.clients.recapture_case import RecaptureCase
from conformance.wire import CHAT

TOY = register_profile(ClientProfile(
    name="{NAME}",
    display="Toy CLI",
    wires=(CHAT,),
    identity=Identity(user_agents=(re.compile(r"\\btoy-cli/(\\d[\\w.\\-]*)"),),
                      tool_names=frozenset({{"read_files", "write_file", "run_shell_command"}})),
    pin="{VERSION}",
    releases=("{VERSION}",),
    npm_package="toy-cli",
    binary="toy",
    binary_env="CONFORMANCE_TOY_BIN",
    launch=Launch(argv=("--prompt", "{{prompt}}", "{{options}}"), base_url_env="TOY_BASE_URL",
                  api_key_env="TOY_API_KEY"),
    recapture=(RecaptureCase("hello", "a one-word prompt, one turn", ("chat-wire",), prompt="hello"),),
))
'''


def _tool(name: str, **properties: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": f"the toy's {name}", "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in properties.items()},
        "required": list(properties)}}}


TOOLS = [_tool("read_files", filepath="string"), _tool("write_file", filepath="string", content="string"),
         _tool("run_shell_command", command="string")]
BODY = {"model": "local-model", "messages": [{"role": "user", "content": "hello"}], "tools": TOOLS}

# Its CLI: prints its version, or sends BODY with the prompt to the base URL and prints the answer.
CLI = f'''#!{sys.executable}
import json, os, sys, urllib.request
if sys.argv[1:] == ["--version"]:
    print("{VERSION}")
    raise SystemExit(0)
body = json.loads({json.dumps(json.dumps(BODY))})
body["messages"][0]["content"] = sys.argv[sys.argv.index("--prompt") + 1]
request = urllib.request.Request(os.environ["TOY_BASE_URL"].rstrip("/") + "/v1/chat/completions",
                                 data=json.dumps(body).encode(), headers={{
                                     "content-type": "application/json", "user-agent": "{USER_AGENT}",
                                     "authorization": "Bearer " + os.environ["TOY_API_KEY"]}})
with urllib.request.urlopen(request, timeout=60) as answer:
    print(json.load(answer)["choices"][0]["message"].get("content") or "")
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy's module in a folder added to the profiles package's path, found by its discovery."""
    folder = tmp_path_factory.mktemp("more-profiles")
    (folder / "toy_cli.py").write_text(MODULE)
    before = list(profiles.__path__)
    profiles.__path__.append(str(folder))
    try:
        assert "conformance.clients.profiles.toy_cli" in profiles.discover()
        yield profile(NAME)
    finally:
        profiles.__path__[:] = before
        PROFILES.pop(NAME, None)
        sys.modules.pop("conformance.clients.profiles.toy_cli", None)


def test_the_module_alone_registers_the_client(toy):
    assert toy.name == NAME and PROFILES[NAME] is toy and toy.wire is CHAT and toy in launchable()


def test_it_is_identified_by_its_user_agent_and_by_its_tools(toy):
    assert identify({"user-agent": USER_AGENT}, BODY, CHAT) == (toy, VERSION, "")
    assert identify({}, BODY, CHAT)[:2] == (toy, "unknown")  # its three tool names are its signature
    who, version, note = identify({"user-agent": "opencode/1.18.33 ai-sdk/provider-utils"}, BODY, CHAT)
    assert (who, version) == (toy, "unknown") and "sent opencode's User-Agent" in note


def test_the_suite_config_accepts_it_as_conformance_client(toy):
    assert SuiteConfig.resolve({"client": NAME}).client == NAME
    with pytest.raises(ConfigError, match="not a known client"):
        SuiteConfig.resolve({"client": "toy-cli-never-registered"})


def test_the_loop_plays_its_tools_by_their_shapes_in_the_sandbox(toy, tmp_path):
    template = Template(CapturedRequest("POST", "/v1/chat/completions", body=BODY), "toy-cli/hello", NAME)
    persona = persona_for(template, BODY, CHAT)
    assert persona.tool_names == ["read_files", "run_shell_command", "write_file"]
    box = Sandbox(tmp_path / "root", persona)
    assert box.voice is GENERIC_VOICE
    assert box.run("write_file", {"filepath": "notes.txt", "content": "plain words\n"}).text == \
        f"wrote {box.root / 'notes.txt'}"
    assert box.run("read_files", {"filepath": "notes.txt"}).text == "plain words\n"
    assert box.run("run_shell_command", {"command": "cat notes.txt"}).text == "plain words\n"
    assert box.read_text("notes.txt") == "plain words\n"


def _cli_prefix(root: Path) -> Path:
    exe = root / "node_modules" / ".bin" / "toy"
    exe.parent.mkdir(parents=True)
    exe.write_text(CLI)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return root


def test_the_recapture_lists_its_case_and_records_it(toy, tmp_path):
    listed = [case.id for case in cases()]
    assert listed.count(f"{NAME}/hello") == 1
    out = tmp_path / "captured"
    assert recapture(["--clients", str(_cli_prefix(tmp_path / "clients")), "--out", str(out), "--scratch",
                      str(tmp_path / "scratch"), "--only", NAME, "--timeout", "60"]) == 0
    cap = load_capture(out / NAME / VERSION / "hello.json")
    assert (cap.client, cap.client_version, cap.case) == (NAME, VERSION, "hello")
    request = cap.main_exchanges()[0].request
    assert identify(request.headers, request.body, CHAT)[:2] == (toy, VERSION)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [entry["file"] for entry in manifest["cases"]] == [f"{NAME}/{VERSION}/hello.json"]
    assert manifest["current"] == {NAME: VERSION}


class _Config:
    """What the live tests' parametrization reads of a pytest config: an empty corpus."""

    def __init__(self, corpus: Path):
        self.stash = pytest.Stash()
        self.corpus = corpus

    def getoption(self, name: str, default=None):
        return str(self.corpus) if name == "conformance_captures" else default


class _Metafunc:
    fixturenames = ("client", "api", "release", "scenario_id")

    def __init__(self, config: _Config):
        self.config = config
        self.params: list[tuple] = []

    def parametrize(self, names: str, params: list[tuple], ids: list[str]) -> None:
        self.params = params


def _live_params(corpus: Path) -> list[tuple]:
    metafunc = _Metafunc(_Config(corpus))
    live_tests.pytest_generate_tests(metafunc)
    return metafunc.params


def test_the_live_tests_run_it_and_a_profile_without_a_launch_is_never_launched(toy, tmp_path):
    assert (NAME, CHAT.name, None) in _live_params(tmp_path)  # no capture of it: the CLI found runs
    with pytest.raises(ValueError, match="recapture cases need a Launch"):
        dataclasses.replace(toy, launch=None)
    unlaunched = dataclasses.replace(toy, name="toy-cli-unlaunched", launch=None, recapture=())
    register_profile(unlaunched)
    try:
        assert unlaunched not in launchable()
        assert all(client != unlaunched.name for client, _, _ in _live_params(tmp_path))
        assert all(case.client is not unlaunched for case in cases())
        with pytest.raises(ValueError, match="cannot run toy-cli-unlaunched's CLI"):
            find_binary(unlaunched)
        assert SuiteConfig.resolve({"client": unlaunched.name}).client == unlaunched.name  # its captures replay
    finally:
        PROFILES.pop(unlaunched.name)


def test_a_profile_refuses_cases_it_cannot_run(toy):
    def with_cases(*recapture, wires=(CHAT,)) -> ClientProfile:
        return ClientProfile(toy.name, toy.display, wires, toy.identity, launch=toy.launch,
                             npm_package=toy.npm_package, recapture=recapture)

    case = toy.recapture[0]
    assert with_cases(case, dataclasses.replace(case, name="again", wire=CHAT)).recapture[1].name == "again"
    with pytest.raises(ValueError, match="does not speak"):
        with_cases(dataclasses.replace(case, wire=CHAT), wires=())
    with pytest.raises(ValueError, match="share a name"):
        with_cases(case, case)
    for prompts in ({}, {"prompt": "hello", "scenario": "write-file"}):
        with pytest.raises(ValueError, match="a prompt or a scenario"):
            RecaptureCase("unsaid", "neither or both", (), **prompts)
