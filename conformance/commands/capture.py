"""`conformance capture`: record a client's traffic through the proxy, or diff two corpora.

Rules:
- `--upstream URL` forwards to any target; `--engine` answers with the embedded reference engine
  (capture a client with no model at all). Exactly one of them, or `--diff OLD NEW`.
- The capture goes to `OUT/LABEL.json` (LABEL defaults to `capture-<UTC time>`), rewritten after
  every exchange, so stopping the proxy (Ctrl-C) at any time leaves a valid file.
- Secrets and identifiers are redacted before anything is written (conformance.capture.redact);
  `--redact-header`, `--keep-header`, `--secret`, `--no-pseudonyms`, `--filler` tune it.
- `--diff` prints the drift summary (at most 40 lines of 100 columns, ranked by risk) and, with
  `--full`, every structural difference after it (conformance.capture.diff); exit 0 when none, 1
  when there are, 2 when a corpus cannot be read.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from pathlib import Path

from conformance.capture.corpus import load_captures
from conformance.capture.diff import diff_paths, drift_summary, format_diff
from conformance.capture.format import CaptureFormatError
from conformance.capture.proxy import CaptureRecorder, CaseInfo, run_proxy_forever
from conformance.capture.redact import SECRET_HEADERS, RedactionConfig
from conformance.commands.argtypes import http_url, listen_address, writable_folder
from conformance.core import secrets
from conformance.core.secrets import without_userinfo
from conformance.engine.launch import serve_engine_in_thread

NAME = "capture"
HELP = "record a client's requests through a redacting proxy (or --diff two corpora)"
DESCRIPTION = (
    "Put a recording proxy between a real client (Claude Code, opencode, ...) and a target: "
    "point the client's base URL at the printed address. Every exchange is redacted and written "
    "to OUT/LABEL.json in the capture format; replay it with `conformance replay`."
)


def add_arguments(parser) -> None:
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--upstream", type=http_url, metavar="URL", help="target to forward to, e.g. http://127.0.0.1:4000")
    src.add_argument("--engine", action="store_true", help="answer with the embedded reference engine")
    src.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="structural diff of two corpora (dirs or files)")
    parser.add_argument("--diff-responses", action="store_true",
                        help="with --diff: also compare response status and content type")
    parser.add_argument("--full", action="store_true",
                        help="with --diff: after the summary, list every structural difference")
    parser.add_argument("--listen", type=listen_address, default="127.0.0.1:0", metavar="HOST:PORT",
                        help="where the proxy listens (default 127.0.0.1:0, a free port; the address is printed)")
    parser.add_argument("--out", type=writable_folder, metavar="DIR", help="folder for the capture file")
    parser.add_argument("--label", metavar="NAME", help="case name and file name (default capture-<UTC time>)")
    parser.add_argument("--client", help="client name to record (default: identified from the requests)")
    parser.add_argument("--client-version", help="client version to record (default: identified from the requests)")
    parser.add_argument("--redact-header", action="append", default=[], metavar="NAME",
                        help="also treat this header as a secret (repeatable)")
    parser.add_argument("--keep-header", action="append", default=[], metavar="NAME",
                        help="never redact this header (repeatable)")
    parser.add_argument("--secret", action="append", default=[], metavar="TEXT",
                        help="an exact string to redact wherever it occurs (repeatable)")
    parser.add_argument("--no-pseudonyms", action="store_true",
                        help="replace identifiers by <redacted:...> instead of consistent pseudonyms")
    parser.add_argument("--filler", action="store_true",
                        help="replace vendor prose (system prompts, tool descriptions) by same-length filler")
    parser.add_argument("--keep-text", action="append", default=[], metavar="TEXT",
                        help="with --filler: user text containing TEXT is the user's own and is kept")


def _port_taken(host: str, port: int) -> str | None:
    """Why the proxy could not listen on host:port (in use, not an address here), or None; asked
    before anything starts, so a bad --listen is one line, not a traceback from the server."""
    if port == 0:
        return None
    try:
        with socket.create_server((host, port)):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def run(args) -> int:
    if args.diff:
        try:
            changes = diff_paths(*args.diff, responses=args.diff_responses)
            old, new = (load_captures(p) for p in args.diff)
        except (CaptureFormatError, FileNotFoundError) as exc:
            print(f"conformance capture --diff: {exc}", file=sys.stderr)
            return 2
        if not changes:
            print(format_diff(changes, *args.diff))
            return 0
        print(drift_summary(old, new, changes))
        if args.full:
            print()
            print(format_diff(changes, *args.diff))
        return 1

    if not args.upstream and not args.engine:
        print("conformance capture: give --upstream URL (a target to forward to), --engine (the embedded "
              "reference engine) or --diff OLD NEW", file=sys.stderr)
        return 2
    if not args.out:
        print("conformance capture: --out DIR is required (where the capture file goes)", file=sys.stderr)
        return 2
    host, port = args.listen
    taken = _port_taken(host, port)
    if taken:
        print(f"conformance capture: --listen {host}:{port}: cannot listen there ({taken}); give a free port, "
              "or port 0 for any free one", file=sys.stderr)
        return 2

    label = args.label or time.strftime("capture-%Y%m%dT%H%M%SZ", time.gmtime())
    if "/" in label or label.startswith("."):
        print(f"conformance capture: --label {label!r} must be a plain file name", file=sys.stderr)
        return 2
    config = RedactionConfig(
        secret_headers=SECRET_HEADERS + tuple(h.lower() for h in args.redact_header),
        keep_headers=tuple(h.lower() for h in args.keep_header),
        extra_secrets=tuple(args.secret),
        pseudonymize=not args.no_pseudonyms,
        prose_filler=args.filler,
        keep_texts=tuple(args.keep_text),
    )
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"conformance capture: --out {out}: cannot create the folder ({exc.strerror or exc}); give a folder "
              "you may write", file=sys.stderr)
        return 2
    info = CaseInfo(case=label, client=args.client, client_version=args.client_version,
                    meta={"captured_at": time.strftime("%Y-%m-%d", time.gmtime()),
                          "upstream": "reference-engine" if args.engine else without_userinfo(args.upstream)})
    # the one scrubber: the upstream's userinfo and the --secret values never reach the file or the console
    secrets.register(urls={"upstream": args.upstream}, extra={f"secret-{n}": v for n, v in enumerate(args.secret, 1)})
    recorder = CaptureRecorder(info, out / f"{label}.json", config)

    with contextlib.ExitStack() as stack:
        upstream = args.upstream
        if args.engine:
            upstream = stack.enter_context(serve_engine_in_thread())
        run_proxy_forever(upstream, recorder, host, port)
    path = recorder.save()
    n = len(recorder.capture().exchanges)
    print(f"recorded {n} exchange(s) to {path}" if n else f"no exchange recorded ({path} not written)",
          file=sys.stderr)
    return 0
