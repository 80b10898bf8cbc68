"""`conformance replay FILE|DIR --target URL`: send captured requests to a target and judge them.

Rules:
- Every model request of each capture (POST to messages / count_tokens / chat completions /
  responses; `HEAD /` and other probes are skipped) is sent in order by the one
  replay-one-capture (`conformance.suite.replay`): byte-exact by default, the body bytes the
  capture's compact JSON (what JSON.stringify sent) and the captured headers along, minus
  hop-by-hop ones and redacted values, with the key placed the way the client sends it.
  `--model-map` and `--salt` change the body (then it is re-serialised the same compact way) and
  say so in the output. Sending, headers and URL joining are the suite's one sender
  (`conformance.net.target.Target`), so a replay sends what the suite sends.
- The deadlines are the suite's defaults, scaled by `--deadline-scale`, or set one by one in
  seconds (`--deadline-connect`, `--deadline-first-content`, `--deadline-total`: what the suite's
  reproduce lines carry). A failure's reproduce line is built by `conformance.report.reproduce`
  (every value quoted; the key read from $CONFORMANCE_API_KEY, never printed).
- Each response is judged by `conformance.checks.exchange.check_exchange`, the same function the
  suite uses, and printed through `conformance.report.text.format_failure`.
- Captures are read by the one corpus scan (`conformance.capture.corpus.load_captures`).
- Exit codes: 0 every capture passed (warnings allowed), 1 at least one error violation, 2 bad
  input (no capture, unreadable or unknown-version file, bad option) or a target that cannot be
  reached at all (nothing was judged).
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from conformance.capture.corpus import load_captures
from conformance.capture.format import CaptureFormatError
from conformance.commands.argtypes import http_url, positive_number
from conformance.core.failures import errors
from conformance.net.target import Target
from conformance.net.transport import Deadlines
from conformance.report.reproduce import KEY_VARIABLE, replay_line
from conformance.report.text import format_failure, format_violation
from conformance.suite.replay import check, replay

NAME = "replay"
HELP = "replay captured client requests against a target and check the responses"
DESCRIPTION = (
    "Send the requests of one capture file (or every capture under a folder) to --target, "
    "byte-exact by default, and judge each response with the suite's checks. This is what a "
    "bug report attaches and what a maintainer runs."
)

def add_arguments(parser) -> None:
    parser.add_argument("path", metavar="FILE|DIR", help="a capture file or a folder of them (e.g. captured/)")
    parser.add_argument("--target", required=True, type=http_url, metavar="URL", help="base URL of the router or engine")
    parser.add_argument("--model-map", action="append", default=[], metavar="A=B",
                        help="send model B where the capture has A (repeatable; '*=B' maps every model)")
    parser.add_argument("--expect-model", action="append", default=[], metavar="SENT=SERVED",
                        help="the model expected to answer when SENT is sent (a router alias; the suite's "
                             "--conformance-model-map); repeatable")
    parser.add_argument("--salt", nargs="?", const="random", default=None, metavar="TEXT",
                        help="prefix the system prompt with a salt (random unless TEXT) to defeat prefix caches")
    parser.add_argument("--api-key", default=None, metavar="KEY",
                        help="key to send (default $CONFORMANCE_API_KEY, else a placeholder)")
    parser.add_argument("--deadline-scale", type=positive_number, default=1.0, metavar="F",
                        help="multiply the first-content and total deadlines (slow CPU engines)")
    parser.add_argument("--only", default=None, metavar="TEXT", help="only captures whose id contains TEXT")
    # The suite's own deadlines, as its reproduce lines carry them (seconds; they override --deadline-scale).
    for name, what in (("connect", "connect"), ("first-content", "first content"), ("total", "whole exchange")):
        parser.add_argument(f"--deadline-{name}", type=float, default=None, metavar="SECONDS",
                            help=f"the {what} deadline in seconds (as the suite's reproduce lines set it)")


def parse_model_map(items: list[str], *, option: str = "--model-map") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        src, sep, dst = item.partition("=")
        if not sep or not src or not dst:
            raise ValueError(f"{option} {item!r}: expected FROM=TO, e.g. claude-opus-4-8=my-model")
        out[src] = dst
    return out


def map_model(model: str | None, model_map: dict[str, str]) -> str | None:
    if model is None:
        return None
    return model_map.get(model, model_map.get("*", model))


def replay_capture(capture, *, target: str, model_map: dict[str, str], salt: str | None, api_key: str,
                   deadlines, expect: dict[str, str] | None = None) -> tuple[list, list[str], bool]:
    """Replay one capture. Returns (violations, notes, reached) — reached is False when no
    request could connect at all."""
    sender = Target(target, api_key, deadlines)

    def send(step):
        req = step.exchange.request
        return sender.send_sync(step.wire, req.path, step.data, method=req.method, query=req.query,
                                captured_headers=req.headers)

    def expected(sent: str | None) -> str | None:
        return (expect or {}).get(sent, sent) if sent is not None else None

    replayed = replay(capture, send, lambda step, raw: check(step, raw, expect_model=expected(step.request.get("model")),
                                                             turn=step.turn),
                      model=lambda captured: map_model(captured, model_map), salt=salt)
    violations = []
    notes: list[str] = []
    for step, raw, verdict in replayed:
        req, note = step.exchange.request, step.exchange.note
        violations.extend(v.at(exchange=f"{capture.id}#{step.turn}") for v in verdict.violations)
        status = raw.status if raw.status is not None else raw.error_kind
        notes.append(f"#{step.turn} {req.method} {req.url_path} -> {status} in {raw.elapsed:.2f}s"
                     + (f" ({note})" if note else "")
                     + (f" [not byte-exact: {', '.join(step.changed)}]" if step.changed else ""))
    return violations, notes, any(raw.error_kind != "connect" for _, raw, _ in replayed)


def run(args) -> int:
    try:
        model_map = parse_model_map(args.model_map)
        expect = parse_model_map(args.expect_model, option="--expect-model")
    except ValueError as exc:
        print(f"conformance replay: {exc}", file=sys.stderr)
        return 2
    if not Path(args.path).exists():
        print(f"conformance replay: {args.path}: no such capture file or folder "
              "(the bundled corpus is under captured/)", file=sys.stderr)
        return 2
    try:
        captures = load_captures(args.path)
    except CaptureFormatError as exc:
        print(f"conformance replay: {exc}", file=sys.stderr)
        return 2
    if args.only:
        captures = [c for c in captures if args.only in c.id]
    captures = [c for c in captures if c.main_exchanges()]
    if not captures:
        print(f"conformance replay: no capture with a model request under {args.path}", file=sys.stderr)
        return 2
    salt = secrets.token_hex(6) if args.salt == "random" else args.salt
    api_key = args.api_key or os.environ.get(KEY_VARIABLE) or "sk-conformance-placeholder"
    base = Deadlines()
    deadlines = base.scaled(args.deadline_scale) if args.deadline_scale != 1.0 else base
    given = (args.deadline_connect, args.deadline_first_content, args.deadline_total)
    if any(s is not None and not s > 0 for s in given):
        print("conformance replay: a --deadline-* value must be a positive number of seconds", file=sys.stderr)
        return 2
    if any(s is not None for s in given):
        deadlines = Deadlines(*(s if s is not None else d for s, d in
                                zip(given, (deadlines.connect, deadlines.first_content, deadlines.total), strict=True)))

    failed = 0
    reached_any = False  # once one request connected, later connect errors are verdicts
    for cap in captures:
        violations, notes, reached = replay_capture(cap, target=args.target, model_map=model_map, salt=salt, expect=expect,
                                                    api_key=api_key, deadlines=deadlines)
        if not reached and not reached_any:
            print(f"conformance replay: cannot connect to {args.target}: is the router or engine running? "
                  "(nothing was judged)", file=sys.stderr)
            return 2
        reached_any = True
        changed = deadlines != base
        reproduce = [replay_line(str(cap.path), args.target, model_map=model_map, salt=salt, expect=expect,
                                 deadlines=(deadlines.connect, deadlines.first_content, deadlines.total) if changed
                                 else None, with_key=bool(args.api_key or os.environ.get(KEY_VARIABLE)))]
        extra = {"exchanges": "; ".join(notes)}
        if errors(violations):
            failed += 1
            print(format_failure(f"FAIL {cap.id}", violations, reproduce=reproduce, extra=extra))
        else:
            print(f"PASS {cap.id} ({len(notes)} exchange(s))")
            for v in violations:
                print(format_violation(v))
        print()
    print(f"{len(captures) - failed} passed, {failed} failed of {len(captures)} capture(s) against {args.target}")
    return 1 if failed else 0
