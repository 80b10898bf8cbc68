"""`conformance check-stream FILE --protocol anthropic|openai|responses [--json]`: judge a saved response body.

Rules:
- FILE is a raw response body as saved by `curl -N`, a proxy or a capture: an SSE stream is
  judged by the protocol's stream state machine (asked of `dialect(protocol)`; the choices are
  DIALECTS). A JSON body is judged as a non-stream response, or, with `--status` >= 400, as an error body (envelope and status). `-` reads stdin.
- `--request REQUEST.json` supplies the request body the stream answered: OpenAI rules depend on
  it (tool_choice, stream_options.include_usage), so does the Responses cap rule (max_output_tokens).
- Every tool call's arguments are judged as the suite judges them (`tools.arguments_schema`,
  `conformance.checks.tools.check_argument_json`), on every wire, with or without `--request`:
  arguments that do not parse to a JSON object.
- `--protocol responses` judges an OpenAI Responses API body (POST /v1/responses, what Codex CLI
  speaks): its event stream, a Response object, or its error envelope.
- Exit 0: no error (warnings and notes allowed); 1: errors found; 2: bad usage, an unreadable
  file or a capture file (`conformance replay` judges those), with one line that says what, why
  and how to fix. An empty or garbled body is a target's answer and gets a verdict.
- Output is the one formatter (`format_violation`) or, with --json, the violations as data.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from conformance.capture.format import FORMAT
from conformance.checks.tools import check_argument_json
from conformance.core.bounded_json import parse as parse_json
from conformance.report.text import format_violation
from conformance.wire.registry import DIALECTS, dialect

NAME = "check-stream"
HELP = ("validate a saved SSE stream (or JSON/error body) against the Anthropic Messages, OpenAI chat or "
        "OpenAI Responses wire rules")


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="raw response bytes (SSE as saved by `curl -N`), or - for stdin")
    parser.add_argument("--protocol", required=True, choices=tuple(DIALECTS),
                        help="which wire the body is on")
    parser.add_argument("--request", metavar="REQUEST.json",
                        help="the request body (OpenAI: tool_choice and stream_options change the rules; "
                        "Responses: max_output_tokens)")
    parser.add_argument("--status", type=int, default=200,
                        help="HTTP status of the response (>= 400 judges FILE as an error body; default 200)")
    parser.add_argument("--json", action="store_true", help="print the verdict and violations as JSON")


def _fail(msg: str) -> int:
    print(f"conformance check-stream: {msg}", file=sys.stderr)
    return 2


def _is_capture(body: bytes) -> bool:
    """A capture file passed where response bytes belong (a mistake, not a target's answer)."""
    if b'"conformance.capture"' not in body[:4096]:
        return False
    try:
        doc = parse_json(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def run(args) -> int:
    try:
        body = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}. Pass the path of a file holding the raw "
                     "response bytes (e.g. saved with `curl -N ... > stream.sse`).")
    request = None
    if args.request:
        try:
            request = parse_json(Path(args.request).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return _fail(f"cannot use --request {args.request}: {exc}. It must be the request body as JSON (what the "
                         "client sent; a capture's exchanges[N].request.body, written by `conformance capture`).")
        if not isinstance(request, dict):
            return _fail(f"--request {args.request} is not a JSON object; pass the request body.")
    if not 100 <= args.status <= 599:
        return _fail(f"--status {args.status} is not an HTTP status code (100-599).")

    if _is_capture(body):
        return _fail(f"{args.file} is a capture file (written by `conformance capture`), not response bytes: judge it "
                     f"with `conformance replay {shlex.quote(args.file)} --target URL`, or pass the saved body of one "
                     "response.")

    wire = dialect(args.protocol)

    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    complete = None
    if args.status >= 400:
        kind = "error"
        violations = wire.check_error(args.status, body)
        events = None
    elif head in (b"{", b"["):
        kind = "response"
        message, violations = wire.check_response(body, request=request)
        violations = violations + check_argument_json(message, wire)
        events = None
    else:
        kind = "stream"
        report = wire.check_stream(body, request=request)
        violations, events, complete = report.violations, len(report.events), report.complete
        violations = violations + check_argument_json(report.message, wire,
                                                      unparsed_input=report.unparsed_tool_input)

    errors = [v for v in violations if v.is_error]
    if args.json:
        print(json.dumps({
            "file": args.file, "protocol": args.protocol, "kind": kind, "events": events, "complete": complete,
            "ok": not errors, "errors": len(errors), "violations": [v.to_dict() for v in violations],
        }, indent=1, ensure_ascii=False))
    else:
        what = f"{events} events" if kind == "stream" else f"{kind} body, HTTP {args.status}"
        for v in violations:
            print(format_violation(v))
        warnings = len(violations) - len(errors)
        verdict = "FAIL" if errors else "ok"
        print(f"{verdict}: {args.file} ({args.protocol}, {what}): {len(errors)} error(s), {warnings} warning(s)/note(s)")
    return 1 if errors else 0
