"""`conformance soak --target URL --duration S --sessions N`: sustained agent sessions, judged.

Rules:
- Runs the soak probe (`conformance.probes.soak.soak_probe`): N sessions replaying the bundled
  agent loops with a shared prefix until the duration ends; prints the verdict of
  `load.soak_stable`, goodput against the SLO options, the figures over time and whether the
  target recovered after the soak. `--json FILE` writes the probe's record (the figures the suite's
  `-m soak` test records).
- The SLO options have the suite's names (`--conformance-slo-ttft`, `--conformance-slo-itl`), so a
  command line moves between the two unchanged.
- Exit codes: 0 the soak passed, 1 `load.soak_stable` failed, 2 bad input or a target that does not
  answer before the soak starts (nothing would be judged).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conformance.commands.argtypes import http_url, positive_number
from conformance.net.transport import Deadlines
from conformance.probes.common import Target, run_sync, target_gone
from conformance.probes.soak import soak_probe
from conformance.wire import DIALECTS, dialect

NAME = "soak"
HELP = "run N agent sessions sharing a prefix against a target for a fixed duration (load.soak_stable)"


def add_arguments(parser) -> None:
    parser.add_argument("--target", required=True, type=http_url, metavar="URL", help="base URL of the router or engine")
    parser.add_argument("--duration", required=True, type=positive_number, metavar="SECONDS",
                        help="how long the sessions run (sessions restart until it ends)")
    parser.add_argument("--sessions", type=int, default=4, metavar="N", help="concurrent agent sessions (default 4)")
    parser.add_argument("--api", choices=sorted(DIALECTS), default="anthropic", help="the wire to speak (default anthropic)")
    parser.add_argument("--model", default="reference-model", help="model to ask for (default reference-model)")
    parser.add_argument("--api-key", default=None, metavar="KEY", help="key to send (default none)")
    parser.add_argument("--conformance-slo-ttft", dest="slo_ttft", type=positive_number, default=None,
                        metavar="SECONDS", help="goodput SLO: time to first token at most this")
    parser.add_argument("--conformance-slo-itl", dest="slo_itl", type=positive_number, default=None,
                        metavar="SECONDS", help="goodput SLO: inter-token latency p95 per request at most this")
    parser.add_argument("--deadline-total", type=positive_number, default=120.0, metavar="SECONDS",
                        help="per-request total deadline (default 120)")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the soak's record as JSON")


def run(args) -> int:
    if args.sessions < 1:
        print(f"conformance soak: --sessions must be at least 1, got {args.sessions}; give a positive count",
              file=sys.stderr)
        return 2
    total = float(args.deadline_total)
    target = Target(args.target, wire=dialect(args.api), model=args.model, api_key=args.api_key,
                    deadlines=Deadlines(connect=5.0, first_content=min(60.0, total), total=total))
    gone = run_sync(target_gone(target))
    if gone:
        print(f"conformance soak: the target {args.target} does not answer ({gone}); start it or fix --target",
              file=sys.stderr)
        return 2
    report = run_sync(soak_probe(target, float(args.duration), args.sessions,
                                 slo_ttft_s=args.slo_ttft, slo_itl_s=args.slo_itl))
    outcome = report.outcome()
    print(f"{outcome.check_id}: {outcome.outcome.upper()}: {outcome.message}")
    print("t_s  requests  out_tok/s  ttft_p95_s  errors")
    for row in outcome.details["series"]:
        print(f"{row['t_s']!s:>4}  {row['requests']:>8}  {row['output_tokens_per_s']!s:>9}  "
              f"{row['ttft_p95_s']!s:>10}  {row['errors']:>6}")
    if args.json:
        Path(args.json).write_text(json.dumps(outcome.details, indent=1) + "\n", encoding="utf-8")
    return 0 if outcome.outcome == "passed" else 1
