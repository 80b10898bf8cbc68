"""The stream fixtures: current with their builder, judged as labelled, and `check-stream` on them.

`conformance check-stream` must flag every single-stream fault of fixtures/faults.json (the rows
owned by issue 2) with one of the row's check ids, and accept every valid variation the fault
catalog lists (docs/faults.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import make_stream_fixtures as mk
import pytest
from wire_helpers import fixture_id, fixtures, index, judge, streams_dir

from conformance.cli import main
from conformance.core.paths import fixtures_dir
from conformance.core.registry import registered as load_all


def test_fixture_files_match_their_builder():
    want = mk.render()
    on_disk = {p.relative_to(streams_dir()).as_posix(): p.read_bytes()
               for p in streams_dir().rglob("*") if p.is_file()}
    assert sorted(on_disk) == sorted(want), "run: python tests/wire/make_stream_fixtures.py"
    stale = [rel for rel, data in want.items() if on_disk[rel] != data]
    assert not stale, f"stale fixtures {stale}: run python tests/wire/make_stream_fixtures.py"


@pytest.mark.parametrize("f", index(), ids=fixture_id)
def test_fixture_is_judged_as_labelled(f):
    violations, _ = judge(f)
    errs = {v.check_id for v in violations if v.is_error}
    if f["valid"]:
        assert not errs, violations
        noted = {v.check_id for v in violations if v.severity == "warning"}
        assert noted == set(f["warnings"])
    else:
        assert errs & set(f["checks"]), (errs, f["checks"])


def _cli(f: dict, *extra: str) -> tuple[int, str]:
    args = ["check-stream", str(streams_dir() / f["file"]), "--protocol", f["protocol"], *extra]
    if f.get("request_file"):
        args += ["--request", str(streams_dir() / f["request_file"])]
    if f["kind"] == "error":
        args += ["--status", str(f["status"])]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(args)
    return rc, out.getvalue()


SINGLE_STREAM_FAULTS = [row for row in json.loads((fixtures_dir() / "faults.json").read_text())["rows"]
                        if row["issue"] == 2]


def test_issue_2_check_ids_are_registered():
    ids = {s.id for s in load_all()}
    missing = {c for row in SINGLE_STREAM_FAULTS for c in row["checks"] if c not in ids and
               not c.startswith("tools.")}  # tools.arguments_schema needs the request's tool schema (issue 4)
    assert not missing


@pytest.mark.parametrize("row", SINGLE_STREAM_FAULTS, ids=lambda r: r["fault"])
def test_check_stream_flags_every_single_stream_fault(row):
    cases = [f for f in fixtures(valid=False) if f.get("fault") == row["fault"]]
    assert cases, f"no fixture reproduces {row['fault']}"
    for f in cases:
        rc, out = _cli(f, "--json")
        verdict = json.loads(out)
        flagged = {v["check_id"] for v in verdict["violations"] if v["severity"] == "error"}
        assert rc == 1 and not verdict["ok"]
        assert flagged & set(row["checks"]), (f["file"], flagged, row["checks"])


# docs/faults.md "Valid variations the suite must accept" -> the fixtures that show each
VALID_VARIATIONS = {
    "ping events anywhere": ["anthropic/valid/pings_and_comments.sse", "anthropic/valid/text.sse"],
    "SSE comments (: keep-alive)": ["anthropic/valid/pings_and_comments.sse", "openai/valid/crlf_and_comments.sse"],
    "CRLF line endings": ["anthropic/valid/crlf.sse", "openai/valid/crlf_and_comments.sse"],
    "unknown event types": ["anthropic/valid/unknown_event_type.sse"],
    "stop_sequence: null": ["anthropic/valid/text.sse"],
    "extra unknown fields": ["anthropic/valid/extra_fields.sse", "openai/valid/extra_fields.sse"],
    "empty first partial_json": ["anthropic/valid/tool_use.sse"],
    "parallel tool calls": ["anthropic/valid/parallel_tool_calls.sse", "openai/valid/parallel_tool_calls.sse"],
    "thinking blocks with signatures": ["anthropic/valid/thinking_signature.sse"],
    "blocks with no deltas": ["anthropic/valid/redacted_thinking.sse", "anthropic/valid/server_tool_result.sse"],
    "empty thinking signature (warning)": ["anthropic/valid/thinking_empty_signature.sse"],
    "named tool_choice finishing with stop": ["openai/valid/named_tool_choice_stop.sse"],
    "a tool call cut by the output cap": ["anthropic/valid/max_tokens_inside_tool.sse",
                                          "openai/valid/length_inside_tool_call.sse"],
}


@pytest.mark.parametrize("variation", list(VALID_VARIATIONS))
def test_check_stream_accepts_every_valid_variation(variation):
    by_file = {f["file"]: f for f in index()}
    for rel in VALID_VARIATIONS[variation]:
        f = by_file[rel]
        assert f["valid"]
        rc, out = _cli(f)
        assert rc == 0, out
        assert out.splitlines()[-1].startswith("ok: ")


def test_every_valid_fixture_passes_check_stream():
    for f in fixtures(valid=True):
        rc, out = _cli(f)
        assert rc == 0, (f["file"], out)


def test_check_stream_exit_codes_and_messages_from_a_real_process(tmp_path):
    exe = [sys.executable, "-m", "conformance.cli", "check-stream"]
    bad = streams_dir() / "anthropic/invalid/stop_sequence_missing.sse"
    p = subprocess.run([*exe, str(bad), "--protocol", "anthropic"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "[error] anthropic.stream.stop_sequence_present" in p.stdout and "likely cause:" in p.stdout
    assert "event #9 message_delta, at /delta/stop_sequence" in p.stdout
    p = subprocess.run([*exe, str(tmp_path / "missing.sse"), "--protocol", "anthropic"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "cannot read" in p.stderr and "curl -N" in p.stderr
    p = subprocess.run([*exe, str(bad), "--protocol", "grpc"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "invalid choice" in p.stderr
    req = tmp_path / "req.json"
    req.write_text("[1]")
    p = subprocess.run([*exe, str(bad), "--protocol", "openai", "--request", str(req)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "not a JSON object" in p.stderr
    good = streams_dir() / "openai/valid/text.sse"
    p = subprocess.run([*exe, "-", "--protocol", "openai"], input=good.read_text(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("ok: -")


def test_checks_command_lists_the_wire_checks():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["checks", "--area", "anthropic.stream"]) == 0
    assert "anthropic.stream.stop_sequence_present" in out.getvalue()
