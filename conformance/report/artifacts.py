"""Failure folders: what a bug report attaches, one folder per failing test.

Rules:
- `reports/failures/<test id>/` holds: `failure.txt` (format_failure, the one renderer),
  `violations.json`, per exchange N the exact request (`N.request.json` with headers redacted and
  `N.request.body`, the bytes sent), the raw response (`N.response.raw`) and its chunks with
  arrival times (`N.response.chunks.jsonl`: a status line, then one chunk record per line in the
  capture format's encoding, `conformance.capture.format.Chunk`), `curl.sh` (the key comes from
  $CONFORMANCE_API_KEY, never from the file; the script stops with a message saying so when a
  request carries a key and the variable is unset), `reproduce.txt` (the `conformance replay` /
  pytest command lines, built quoted by the caller) and `versions.json`.
- A generated script is data-safe: every value written into curl.sh is quoted (`shlex.quote`)
  and text from a capture or a target (an exchange's note, a URL) reaches a `#` comment only as
  one escaped line (`script_comment`), so no byte of it can start a command.
- What a folder records of a response is capped like what the transport reads
  (`conformance.net.transport.Limits.response_bytes`, or `max_response_bytes=`): past the cap the
  raw file and the chunk records stop, and the status line of `N.response.chunks.jsonl` says
  `"truncated": {"kept": bytes, "of": bytes}`.
- Secrets never reach disk: credentials in headers are replaced by `<redacted:...>`
  (`conformance.capture.redact.redact_credentials`, the one redactor); captured bodies are
  already redacted by the capture proxy; every file passes through the run's scrubber
  (`conformance.core.secrets`), which replaces the key and URL credentials wherever the target
  echoed them.
- `prepare(report_dir)` clears what a previous run left so reports describe one run, in a folder
  that is the suite's own: one holding the marker file `.conformance-report` (MARKER), which
  prepare writes into a new or empty folder. A folder with other files and no marker is refused
  (ReportDirError, one line); nothing the suite did not write is removed even in a marked one:
  results-*.jsonl and run.json in results/, the failure folders (those holding failure.txt)
  under failures/, summary.md and report.html; emptied folders go too.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

from conformance.capture.format import Chunk
from conformance.capture.redact import redact_credentials
from conformance.core.failures import Violation
from conformance.core.secrets import scrub_bytes, scrub_chunks, scrub_text
from conformance.net.transport import Limits
from conformance.report.text import format_failure

MARKER = ".conformance-report"
MARKER_TEXT = ("This folder is the conformance suite's report folder: each run replaces the results-*.jsonl "
               "and run.json in results/, the failure folders in failures/, summary.md and report.html.\n")


class ReportDirError(ValueError):
    """A report folder the suite may not use, said in one line (what, why, how to fix)."""


def refusal(report_dir: Path) -> str | None:
    """Why the suite may not use `report_dir` (a file on its path, a folder holding files without
    the marker), or None. Reads only; `conformance run` asks it before pytest starts."""
    report_dir = Path(report_dir)
    probe = report_dir
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        where = "is a file" if probe == report_dir else f"is under {probe}, which is a file"
        return f"report folder {report_dir} {where}: give --conformance-report-dir a folder path"
    if probe == report_dir and not (report_dir / MARKER).is_file() and any(report_dir.iterdir()):
        return (f"report folder {report_dir} holds files the suite did not write (no {MARKER} marker), and a run "
                "replaces results/, failures/, summary.md and report.html: give --conformance-report-dir a new "
                "or empty folder")
    return None


def prepare(report_dir: Path) -> None:
    report_dir = Path(report_dir)
    problem = refusal(report_dir)
    if problem is not None:
        raise ReportDirError(problem)
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportDirError(f"report folder {report_dir}: cannot create it ({exc.strerror or exc}); give "
                             "--conformance-report-dir a folder path you may write") from None
    marker = report_dir / MARKER
    if not marker.is_file():
        marker.write_text(MARKER_TEXT, encoding="utf-8")
        return
    results = report_dir / "results"
    for written in [*results.glob("results-*.jsonl"), results / "run.json"]:
        written.unlink(missing_ok=True)
    _remove_failure_folders(report_dir / "failures")
    for name in ("summary.md", "report.html"):
        (report_dir / name).unlink(missing_ok=True)
    for folder in (results, report_dir / "failures"):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when emptied


def _remove_failure_folders(root: Path) -> None:
    """The folders under `root` that write_failure_folder made (holding failure.txt), then every
    folder left empty; anything else stays."""
    if not root.is_dir() or root.is_symlink():
        return
    made = {p.parent for p in root.rglob("failure.txt")}
    for folder in sorted(made, key=lambda p: len(p.parts), reverse=True):
        shutil.rmtree(folder, ignore_errors=True)
    for folder in sorted((p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()),
                         key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


KEY_VARIABLE = "CONFORMANCE_API_KEY"
# Stops the script, before any request, when a request needs the key and the variable is unset.
KEY_GUARD = (f': "${{{KEY_VARIABLE}:?set {KEY_VARIABLE} to the API key of the target first (this folder never holds it; '
             'any value for a target without keys)}"')


def script_comment(text: str) -> str:
    """`text` as one `#` comment line: control characters, line and paragraph separators escaped
    (a newline in a note must not end the comment and start a command)."""
    return "# " + json.dumps(text, ensure_ascii=True)[1:-1]


def wire_url(url: str) -> str:
    """`url` as it goes on the wire: what may not appear in a URL (spaces, quotes, backticks,
    control and non-ASCII characters) percent-encoded, what already is encoded left alone (curl
    refuses a URL with a space)."""
    return quote(url, safe="/:?&=%#+;,@!$'()*[]~")


def carries_key(headers: dict[str, str]) -> bool:
    return any(name.lower() in ("x-api-key", "authorization") for name in headers)


def curl_command(method: str, url: str, headers: dict[str, str], body_file: str, *, stream: bool) -> str:
    parts = ["curl", "-sS"]
    if stream:
        parts.append("-N")
    parts += ["-X", shlex.quote(method), shlex.quote(wire_url(url))]
    for name, value in sorted(headers.items()):
        low = name.lower()
        if low == "x-api-key":
            parts += ["-H", f'"x-api-key: ${KEY_VARIABLE}"']
        elif low == "authorization":
            parts += ["-H", f'"Authorization: Bearer ${KEY_VARIABLE}"']
        elif low in ("content-length", "host"):
            continue
        else:
            parts += ["-H", shlex.quote(f"{name}: {value}")]
    parts += ["--data-binary", shlex.quote(f"@{body_file}")]
    return " ".join(parts)


def capped_chunks(chunks: list[tuple[float, bytes]], cap: int) -> tuple[list[tuple[float, bytes]], int]:
    """The chunks up to `cap` bytes (the last one cut at the cap), and the full size."""
    out: list[tuple[float, bytes]] = []
    kept = size = 0
    for t, data in chunks:
        size += len(data)
        if kept < cap:
            part = data[: cap - kept]
            out.append((t, part))
            kept += len(part)
    return out, size


def write_failure_folder(
    folder: Path,
    *,
    title: str,
    violations: list[Violation],
    exchanges: list[Any],  # conformance.suite.session.Sent
    reproduce: list[str],
    versions: dict[str, str],
    extra: dict[str, str] | None = None,
    max_response_bytes: int | None = None,
) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "failure.txt").write_text(
        scrub_text(format_failure(title, violations, reproduce=reproduce, extra=extra) + "\n"), encoding="utf-8")
    (folder / "violations.json").write_text(
        scrub_text(json.dumps([v.to_dict() for v in violations], indent=1, ensure_ascii=False) + "\n"),
        encoding="utf-8")
    cap = max_response_bytes if max_response_bytes is not None else Limits().response_bytes
    curls = ["#!/bin/sh", "# Re-send the exact requests of this failure. The key is read from the environment.",
             'cd "$(dirname "$0")"']
    for n, sent in enumerate(exchanges, 1):
        raw = sent.raw
        body_file = f"{n}.request.body"
        (folder / body_file).write_bytes(scrub_bytes(raw.request_body))
        (folder / f"{n}.request.json").write_text(scrub_text(json.dumps({
            "note": sent.note, "method": raw.method, "url": raw.url,
            "headers": redact_credentials(raw.request_headers), "body": sent.request,
        }, indent=1, ensure_ascii=False) + "\n"), encoding="utf-8")
        chunks, size = capped_chunks(scrub_chunks(raw.chunks), cap)
        with (folder / f"{n}.response.raw").open("wb") as fh:
            for _t, data in chunks:
                fh.write(data)
        with (folder / f"{n}.response.chunks.jsonl").open("w", encoding="utf-8") as fh:
            head = {"status": raw.status, "headers": raw.response_headers, "error_kind": raw.error_kind,
                    "error": raw.error, "elapsed": round(raw.elapsed, 6), "first_content_at": raw.first_content_at}
            kept = sum(len(d) for _t, d in chunks)
            if kept < size:
                head["truncated"] = {"kept": kept, "of": size}
            fh.write(scrub_text(json.dumps(head, ensure_ascii=False)) + "\n")
            for t, data in chunks:
                fh.write(json.dumps(Chunk(t, data).to_json(), ensure_ascii=False) + "\n")
        stream = isinstance(sent.request, dict) and sent.request.get("stream") is True
        curls.append(script_comment(f"{n}: {sent.note or raw.url}"))
        curls.append(curl_command(raw.method, raw.url, raw.request_headers, body_file, stream=stream))
    if any(carries_key(sent.raw.request_headers) for sent in exchanges):
        curls.insert(2, KEY_GUARD)
    (folder / "curl.sh").write_text(scrub_text("\n".join(curls) + "\n"), encoding="utf-8")
    (folder / "reproduce.txt").write_text(scrub_text("\n".join(reproduce) + "\n"), encoding="utf-8")
    (folder / "versions.json").write_text(scrub_text(json.dumps(versions, indent=1, sort_keys=True) + "\n"),
                                          encoding="utf-8")
    return folder
