"""Client turns from recorded exchanges (conformance.capture.turns): a resend of one turn with
stream: false is a non-stream fallback.

The fallback capture is real: Claude Code 2.1.332 (`claude -p ... --output-format json`, the
recapture case `default`) recorded through the recording proxy in front of the reference engine
with fault `non-stream-fallback` (a text/plain stream of bare data: lines): the client sent the
turn again with stream: false. The live test below re-records it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.capture.format import load_capture
from conformance.capture.turns import client_turns, fallback_outcome
from conformance.core.paths import captured_dir

DATA = Path(__file__).resolve().parent / "data"
FALLBACK = DATA / "nonstream-fallback-claude-code-2.1.332.json"


def test_a_resent_turn_with_stream_false_is_a_fallback():
    cap = load_capture(FALLBACK)
    turns = client_turns(cap)
    assert len(cap.main_exchanges()) == 2 and len(turns) == 1 and turns[0].fell_back
    outcome = fallback_outcome(cap)
    assert outcome.outcome == "failed" and outcome.check_id == "client_wire.stream.no_nonstream_fallback"
    text = outcome.violations[0].message
    assert "stream: false" in text and "text/plain" in text and "turn 1" in text


@pytest.mark.parametrize("case", ["claude-code/2.1.332/tool-loop-thinking", "claude-code/2.1.197/tool-loop",
                                  "opencode/1.18.33/openai-tool-loop"])
def test_the_committed_loops_never_fell_back(case):
    cap = load_capture(captured_dir() / f"{case}.json")
    turns = client_turns(cap)
    assert len(turns) == len(cap.main_exchanges()) >= 2
    assert fallback_outcome(cap).outcome == "passed"


@pytest.mark.slow
@pytest.mark.live
@pytest.mark.parametrize("fault", ["non-stream-fallback", None])
def test_live_claude_code_falls_back_on_an_unusable_stream(tmp_path, fault):
    from conformance.capture import recapture
    from conformance.engine.launch import serve_engine_in_thread

    clients = Path(os.environ.get("CONFORMANCE_CLIENTS_DIR_2_1_332", "/work/clients/cc332"))
    if not (clients / "node_modules/.bin/claude").exists():
        pytest.fail(f"Claude Code 2.1.332 is not installed in {clients} (set CONFORMANCE_CLIENTS_DIR_2_1_332)")
    with serve_engine_in_thread(faults=[fault] if fault else []) as url:
        rc = recapture.main(["--clients", str(clients), "--out", str(tmp_path), "--only", "claude-code/default",
                             "--upstream", url, "--scratch", str(tmp_path / "scratch")])
    assert rc == 0
    cap = load_capture(next(tmp_path.glob("claude-code/*/default.json")))
    assert fallback_outcome(cap).outcome == ("failed" if fault else "passed")
