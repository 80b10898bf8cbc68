"""The reproduce lines as text: every value comes back from the shell as the one word it was, the
key is a reference to its variable, and options that only say where reports go are left out (a
reproduction must not overwrite the run it reproduces)."""

from __future__ import annotations

import shlex

from conformance.report.reproduce import KEY_REFERENCE, pytest_line, replay_line

HOSTILE = "a b;$(touch X)`id`'\"\n#"


def test_every_value_is_one_word_and_the_key_a_reference():
    line = replay_line(f"/caps/{HOSTILE}.json", "http://h:1/v1", model_map={HOSTILE: "m b"}, salt=HOSTILE,
                       deadlines=(5.0, 30.5, 120.0), expect={"m b": HOSTILE}, with_key=True)
    words = shlex.split(line)
    assert words[:5] == ["conformance", "replay", f"/caps/{HOSTILE}.json", "--target", "http://h:1/v1"]
    assert words[words.index("--model-map") + 1] == f"{HOSTILE}=m b"
    assert words[words.index("--expect-model") + 1] == f"m b={HOSTILE}"
    assert words[words.index("--salt") + 1] == HOSTILE
    assert words[words.index("--deadline-first-content") + 1] == "30.5"
    assert line.endswith(f"--api-key {KEY_REFERENCE}") and words[-1] == "$CONFORMANCE_API_KEY"
    assert "--api-key" not in replay_line("c.json", "http://h:1")


def test_the_pytest_line_carries_the_run_options_but_not_where_reports_go():
    options = {"conformance_target": "http://h:1", "conformance_model": HOSTILE, "conformance_salt": True,
               "conformance_model_map": ["a=b", "c=d"], "conformance_report_dir": "/keep/out",
               "conformance_baseline_write": "b.json", "conformance_api_key": "sk-secret", "conformance_client": None,
               "conformance_injection_route": False}
    line = pytest_line("/t/test_x.py::test_y[a b]", options, markexpr="load", with_key=True)
    words = shlex.split(line)
    assert words[:6] == ["pytest", "/t/test_x.py::test_y[a b]", "-p", "no:cacheprovider", "-m", "load"]
    assert "--target=http://h:1" in words and f"--conformance-model={HOSTILE}" in words
    assert "--conformance-salt" in words and words.count("--conformance-model-map=a=b") == 1
    assert "--conformance-model-map=c=d" in words
    assert not any(w.startswith(("--conformance-report-dir", "--conformance-baseline", "--conformance-client",
                                 "--conformance-injection-route")) for w in words)
    assert "sk-secret" not in line and line.endswith(f"--conformance-api-key={KEY_REFERENCE}")
