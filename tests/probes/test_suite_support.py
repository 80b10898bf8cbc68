"""The probes as users run them (conformance.probes.suite_support): `pytest --target=URL
-m context|load` with the plugin's options, and the wire they speak."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conformance.core.results import read_results
from conformance.probes.suite_support import served_wire
from conformance.wire import ANTHROPIC, CHAT, RESPONSES


def _pytest(tmp_path, url, *args, timeout=120):
    cmd = [sys.executable, "-m", "pytest", f"--target={url}", "-p", "no:cacheprovider", "-q", "-rA",
           f"--conformance-report-dir={tmp_path / 'reports'}", *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def test_context_probes_pass_on_the_conformant_engine_and_record_results(engine, tmp_path):
    url = engine()
    r = _pytest(tmp_path, url, "-m", "context", "-k", "limit_known or over_limit or output_cap")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "3 passed" in r.stdout, r.stdout[-2000:]
    records = {x.check_id: x for x in read_results(tmp_path / "reports" / "results")}
    assert records["context.over_limit_refused"].outcome == "passed"
    assert records["context.limit_known"].message.startswith("limit 4096")
    assert records["reasoning.output_cap"].outcome == "passed"


@pytest.mark.slow
def test_over_limit_fault_fails_with_its_check_id_and_a_failure_folder(engine, tmp_path):
    url = engine("over-limit-not-refused")
    r = _pytest(tmp_path, url, "-m", "context", "-k", "over_limit", "--conformance-repeat", "2")
    assert r.returncode == 1, r.stdout[-3000:]
    assert "context.over_limit_refused" in r.stdout and "silently truncated" in r.stdout
    assert "failed in all 2 runs" in r.stdout
    assert (tmp_path / "reports" / "failures").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("limit", ["1000"])
def test_the_context_limit_option_is_used(engine, tmp_path, limit):
    url = engine()
    r = _pytest(tmp_path, url, "-m", "context", "-k", "limit_known", f"--conformance-context-limit={limit}")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "limit 1000 (from the option); advertised 4096" in r.stdout


def test_repeat_refuses_rerun_plugins(engine, tmp_path):
    pytest.importorskip("pytest_rerunfailures")
    url = engine()
    r = _pytest(tmp_path, url, "-m", "context", "-k", "limit_known", "--conformance-repeat", "3", "--reruns", "2")
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    assert "cannot run together with --reruns" in (r.stdout + r.stderr)


def test_a_load_run_puts_the_client_limited_flag_per_level_in_junit(engine, tmp_path):
    """What the load probe knows of its own ceiling reaches the JUnit report as properties."""
    url = engine(max_context=200_000)  # the captured prompts fit (the context probes' 4096 would refuse them)
    r = _pytest(tmp_path, url, "-m", "load", "-k", "concurrency_at_n", "--conformance-concurrency=2",
                f"--junitxml={tmp_path / 'junit.xml'}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").iter("property")}
    assert props.get("load_client_limited_levels") == "none", props
    assert props.get("load_c2_client_limited") == "no", props
    assert "load_c2_client_loop_lag_p95_ms" in props


class _Session:
    def __init__(self, *served):
        self.served = set(served)
        self.asked: list[str] = []

    def serves(self, wire) -> bool:
        self.asked.append(wire.name)
        return wire in self.served


class _Settings:
    def __init__(self, api="auto"):
        self.api = api


def test_the_probes_speak_the_first_served_wire_responses_included():
    assert served_wire(_Session(ANTHROPIC, CHAT, RESPONSES), _Settings()) is ANTHROPIC
    assert served_wire(_Session(CHAT, RESPONSES), _Settings()) is CHAT
    only_responses = _Session(RESPONSES)
    assert served_wire(only_responses, _Settings()) is RESPONSES
    assert only_responses.asked == ["anthropic", "openai", "responses"]
    assert served_wire(_Session(), _Settings()) is CHAT, "a target that serves none is probed on OpenAI chat"
    named = _Session(ANTHROPIC)
    assert served_wire(named, _Settings("responses")) is RESPONSES and named.asked == [], "the option is not probed"
