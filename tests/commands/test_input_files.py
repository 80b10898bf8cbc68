"""A file that is not what `conformance replay` or `conformance check-stream` reads: one line that
says what was expected and which command writes it, exit 2, nothing judged (no target is needed:
the file is refused before anything is sent)."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.core.paths import captured_dir

UNUSED_TARGET = "http://127.0.0.1:9"  # never reached: the file is refused first


def _one_line(capsys) -> str:
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    return lines[0]


@pytest.mark.parametrize("content, said", [
    ("hello, not json", "not JSON"),
    ("[1, 2]", "it holds a JSON array"),
    ('{"messages": []}', 'a JSON object without a "format" field (keys: messages)'),
    ('{"format": "har"}', 'its "format" is "har"'),
    ("null", "it holds a JSON null"),
])
def test_replay_refuses_a_file_that_is_not_a_capture(tmp_path, capsys, content, said):
    path = tmp_path / "bug.json"
    path.write_text(content, encoding="utf-8")
    assert main(["replay", str(path), "--target", UNUSED_TARGET]) == 2
    line = _one_line(capsys)
    assert said in line
    assert "`conformance capture`" in line  # which command writes what was expected
    assert "None" not in line  # never Python's words


def test_check_stream_refuses_a_capture_and_points_to_replay(capsys):
    capture = next(captured_dir().glob("claude-code/*/*.json"))
    assert json.loads(capture.read_text(encoding="utf-8"))["format"] == "conformance.capture"
    assert main(["check-stream", "--protocol", "anthropic", str(capture)]) == 2
    line = _one_line(capsys)
    assert "is a capture file" in line and f"conformance replay {capture}" in line


def test_check_stream_refuses_a_request_that_is_not_json(tmp_path, capsys):
    body, request = tmp_path / "stream.sse", tmp_path / "request.json"
    body.write_bytes(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
    request.write_text("model=claude", encoding="utf-8")
    assert main(["check-stream", "--protocol", "anthropic", "--request", str(request), str(body)]) == 2
    line = _one_line(capsys)
    assert "request body as JSON" in line and "`conformance capture`" in line
