"""scripts/sdk_api_tests.py counts honestly: skips apart from passes, a deliberate difference only
when both the test and its failure text match, any other failure as failed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sdk_api_tests.py"


def _load():
    spec = importlib.util.spec_from_file_location("sdk_api_tests", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.api_resources.chat.test_completions.TestCompletions" name="test_method_create_overload_1[loose]"/>
<testcase classname="tests.api_resources.chat.test_completions.TestCompletions" name="test_method_create_with_all_params_overload_1[strict]">
 <skipped type="pytest.xfail" message="deliberate difference: the generated test sends max_tokens=0"/></testcase>
<testcase classname="tests.api_resources.chat.test_completions.TestCompletions" name="test_method_create_with_all_params_overload_2[strict]">
 <failure message="openai.APIConnectionError: Connection error.">tb</failure></testcase>
<testcase classname="tests.api_resources.test_responses.TestResponses" name="test_method_create_overload_1[loose]">
 <skipped message="skipped by the SDK"/></testcase>
<testcase classname="tests.api_resources.test_responses.TestResponses" name="test_method_create_overload_2[loose]">
 <error message="fixture error"/></testcase>
</testsuite></testsuites>"""


def test_counts_keep_skips_deliberate_differences_and_failures_apart(tmp_path):
    mod = _load()
    junit = tmp_path / "j.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    assert mod.counts(junit) == {"passed": 1, "skipped": 1, "deliberate": 1, "failed": 1, "errors": 1}


def test_lock_pins_read_the_sdists_uv_lock(tmp_path):
    mod = _load()
    (tmp_path / "uv.lock").write_text(
        'version = 1\n[[package]]\nname = "pytest"\nversion = "9.0.3"\n'
        '[[package]]\nname = "pydantic"\nversion = "1.10.0"\n[[package]]\nname = "pydantic"\nversion = "2.12.5"\n'
        '[[package]]\nname = "Dirty_Equals"\nversion = "0.11"\n', encoding="utf-8")
    assert mod.lock_pins(tmp_path) == {"pytest": "9.0.3", "dirty-equals": "0.11"}  # two pydantics: no pin


SDK_TEST = """
class TestCompletions:
    def test_method_create_with_all_params_overload_1(self):
        raise ValueError("Error code: 400 - max_tokens: Input should be an integer >= 1")

    def test_method_create_with_all_params_overload_2(self):
        raise ValueError("Connection error.")

    def test_method_create_overload_1(self):
        pass
"""


def test_plugin_reports_only_a_deliberate_difference_as_expected_failure(tmp_path):
    """The SDK's run prints FAILED only for a real failure: the documented difference (test and
    failure text both match) becomes an expected failure with its reason, another failure of the
    same test family stays a failure."""
    folder = tmp_path / "tests" / "api_resources" / "chat"
    folder.mkdir(parents=True)
    (folder / "test_completions.py").write_text(SDK_TEST, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parent)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rxf", "-p", "no:cacheprovider", "-p", "sdk_deliberate",
                           "-o", "addopts=", f"--junitxml={tmp_path / 'j.xml'}", "tests"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "1 failed, 1 passed, 1 xfailed" in proc.stdout, proc.stdout
    assert "FAILED tests/api_resources/chat/test_completions.py::TestCompletions::test_method_create_with_all_params_overload_2" in proc.stdout
    assert "test_method_create_with_all_params_overload_1 - deliberate difference" in proc.stdout
    assert _load().counts(tmp_path / "j.xml") == {"passed": 1, "skipped": 0, "deliberate": 1, "failed": 1, "errors": 0}
