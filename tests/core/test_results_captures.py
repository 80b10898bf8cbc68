"""The results record and the capture format round-trip and refuse what they do not know."""

import json

import pytest

from conformance.capture.corpus import iter_capture_files
from conformance.capture.format import (
    Capture,
    CapturedRequest,
    CapturedResponse,
    CaptureFormatError,
    Chunk,
    Exchange,
    capture_to_json,
    load_capture,
    save_capture,
)
from conformance.core.results import Result, ResultsWriter, read_results


def test_results_are_written_per_worker_and_merged_in_time_order(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    w1 = ResultsWriter(tmp_path)
    w1.write(Result("t::b", "suite.request.accepted", "failed", timestamp=2.0))
    w0 = ResultsWriter(tmp_path, worker="gw0")
    w0.write(Result("t::a", "suite.request.accepted", "passed", timestamp=1.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results-gw0.jsonl", "results-gw1.jsonl"]
    assert [r.test_id for r in read_results(tmp_path)] == ["t::a", "t::b"]


def test_results_refuse_unknown_outcome_and_version(tmp_path):
    with pytest.raises(ValueError, match="outcome"):
        Result("t", "c", "green")
    bad = tmp_path / "results-x.jsonl"
    bad.write_text(json.dumps({"test_id": "t", "check_id": "c", "outcome": "passed", "record_version": 99}) + "\n")
    with pytest.raises(ValueError, match="results-x.jsonl:1"):
        read_results(tmp_path)


def _capture():
    body = {"model": "m", "messages": [{"role": "user", "content": "\"say hi\" — ünïcode"}], "stream": True}
    req = CapturedRequest("POST", "/v1/messages", "beta=true", {"Anthropic-Version": "2023-06-01"}, body)
    resp = CapturedResponse(200, {"content-type": "text/event-stream"},
                            [Chunk(0.01, b"event: ping\n"), Chunk(0.02, b"\xe2\x82"), Chunk(0.03, b"\xac\n\n")])
    return Capture("claude-code", "2.1.197", "default", [Exchange(req, resp, "turn 1")], covers=["x"])


def test_capture_round_trip_keeps_bytes_and_chunk_boundaries(tmp_path):
    cap = _capture()
    path = save_capture(cap, tmp_path / "c" / "default.json")
    loaded = load_capture(path)
    assert loaded.id == "claude-code/2.1.197/default"
    ex = loaded.exchanges[0]
    assert ex.request.headers == {"anthropic-version": "2023-06-01"}
    assert [c.data for c in ex.response.chunks] == [c.data for c in cap.exchanges[0].response.chunks]
    assert ex.response.chunks[1].data == b"\xe2\x82"  # not UTF-8 alone: stored as b64
    # compact JSON with no ASCII escaping, as JSON.stringify sends it
    assert ex.request.body_bytes() == json.dumps(cap.exchanges[0].request.body, ensure_ascii=False,
                                                 separators=(",", ":")).encode()
    assert b"\\u" not in ex.request.body_bytes()
    assert ex.request.api == "anthropic" and ex.request.url_path == "/v1/messages?beta=true"
    assert loaded.main_exchanges() == loaded.exchanges


def test_unknown_format_or_version_fails_loudly(tmp_path):
    d = capture_to_json(_capture())
    d["version"] = 2
    p = tmp_path / "v2.json"
    p.write_text(json.dumps(d))
    with pytest.raises(CaptureFormatError, match="version 2 is not supported"):
        load_capture(p)
    p.write_text(json.dumps({"format": "har"}))
    with pytest.raises(CaptureFormatError, match="not a capture file"):
        load_capture(p)
    with pytest.raises(CaptureFormatError, match="no such capture file"):
        load_capture(tmp_path / "missing.json")


def test_iter_capture_files_skips_the_manifest(tmp_path):
    save_capture(_capture(), tmp_path / "a" / "x.json")
    (tmp_path / "manifest.json").write_text("{}")
    assert [p.name for p in iter_capture_files(tmp_path)] == ["x.json"]
