"""`conformance engine`: run the reference engine (a deterministic, spec-faithful scripted LLM server).

Prints exactly one line, `listening on http://HOST:PORT`, once it accepts connections; runs
until SIGINT/SIGTERM and then stops cleanly (exit 0). Bad arguments exit 2 with a message.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from aiohttp import web

from conformance.commands.argtypes import port, positive_number
from conformance.engine import faults as fault_modes
from conformance.engine import variations as variation_modes
from conformance.engine.scenarios import EngineScenarioError
from conformance.engine.server import build_app
from conformance.engine.state import DEFAULT_MAX_CONTEXT, DEFAULT_MODEL, EngineConfig

NAME = "engine"
HELP = "run the reference engine (scripted, deterministic LLM server) with optional faults and variations"
DESCRIPTION = (
    "Run the reference engine: /v1/messages, /v1/messages/count_tokens, /v1/chat/completions, "
    "/v1/responses, /v1/models, /health. Prints `listening on http://HOST:PORT` when ready. "
    "See docs/engine.md."
)


def add_arguments(parser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8400, help="port (0 = a free one; default 8400)")
    parser.add_argument("--model", default=None, help="model name served and advertised (default reference-model)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME",
                        help="switch a fault on (repeatable; `conformance faults` lists them)")
    parser.add_argument("--variation", action="append", default=[], metavar="NAME",
                        help="switch a valid variation on (repeatable; `conformance variations` lists them)")
    parser.add_argument("--prefill-rate", type=positive_number, default=None, metavar="TOKENS_PER_S",
                        help="stream pacing: prompt tokens per second before the first event (default: no prefill wait)")
    parser.add_argument("--decode-rate", type=positive_number, default=None, metavar="TOKENS_PER_S",
                        help="stream pacing: content tokens per second (default: the writer's built-in pace)")
    parser.add_argument("--die-after", type=positive_number, default=30.0, metavar="SECONDS",
                        help="dies-under-sustained-load: seconds of sustained shared-prefix load before death (default 30)")
    parser.add_argument("--die-at-inflight", type=positive_number, default=4, metavar="N",
                        help="dies-under-sustained-load: shared-prefix requests in flight that count as load (default 4)")
    parser.add_argument("--max-context", type=int, default=None, metavar="TOKENS",
                        help="context limit in engine tokens (default 131072)")
    parser.add_argument("--scenarios", default=None, metavar="DIR",
                        help="folder of scenario files (default: the bundled fixtures/scenarios)")


def run(args) -> int:
    try:
        faults = fault_modes.validate(args.fault)
    except fault_modes.UnknownFault as e:
        print(f"conformance engine: {e}", file=sys.stderr)
        return 2
    try:
        variations = variation_modes.validate(args.variation)
    except variation_modes.UnknownVariation as e:
        print(f"conformance engine: {e}", file=sys.stderr)
        return 2
    for flag, rate in (("--prefill-rate", args.prefill_rate), ("--decode-rate", args.decode_rate)):
        if rate is not None and not rate > 0:
            print(f"conformance engine: {flag} must be a positive number of tokens per second, got {rate:g}",
                  file=sys.stderr)
            return 2
    max_context = args.max_context if args.max_context is not None else DEFAULT_MAX_CONTEXT
    if max_context < 1:
        print("conformance engine: --max-context must be a positive number of tokens", file=sys.stderr)
        return 2
    config = EngineConfig(model=args.model or DEFAULT_MODEL, faults=faults, max_context=max_context,
                          scenarios_dir=args.scenarios, exit_on_crash=True, variations=variations,
                          prefill_tokens_per_s=args.prefill_rate, decode_tokens_per_s=args.decode_rate,
                          die_after_s=float(args.die_after), die_at_inflight=max(1, int(args.die_at_inflight)))
    try:
        app = build_app(config)
    except EngineScenarioError as e:
        print(f"conformance engine: {e}", file=sys.stderr)
        return 2

    async def serve() -> None:
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, args.host, args.port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise SystemExit(f"conformance engine: cannot listen on {args.host}:{args.port}: {e}") from e
        port = site._server.sockets[0].getsockname()[1]
        host = args.host if ":" not in args.host else f"[{args.host}]"
        print(f"listening on http://{host}:{port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()

    try:
        asyncio.run(serve())
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise
    return 0
