"""`conformance router`: run the reference router (Anthropic Messages -> OpenAI chat) in front of an engine.

Prints one line `listening on http://127.0.0.1:PORT` once it accepts connections, then serves
until interrupted. Router faults are switched on with `--fault NAME` (repeatable).
"""

from __future__ import annotations

import asyncio
import sys

from conformance.commands.argtypes import http_url, port
from conformance.router.faults import ROUTER_FAULTS
from conformance.router.launch import LISTENING, _start_site
from conformance.router.server import RouterConfig, make_app

NAME = "router"
HELP = "run the reference router (Anthropic /v1/messages -> OpenAI chat completions) with optional faults"
DESCRIPTION = (
    "Run the reference router: it serves Anthropic /v1/messages and forwards to --upstream, translated "
    "to OpenAI chat completions (default) or passed through to the upstream's own /v1/messages "
    "(--upstream-api anthropic). Correct by default; --fault NAME switches on a router-side fault."
)


def add_arguments(parser) -> None:
    parser.add_argument("--upstream", type=http_url, help="base URL of the engine, e.g. http://127.0.0.1:8000 (required to serve)")
    parser.add_argument("--upstream-api", choices=("openai", "anthropic"), default="openai",
                        help="openai: translate to /v1/chat/completions (default); anthropic: pass through to /v1/messages")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME",
                        help="router fault to switch on (repeatable): " + ", ".join(sorted(ROUTER_FAULTS)))
    parser.add_argument("--model", help="upstream model name to send (default: the client's model, unchanged)")
    parser.add_argument("--fallback-model", help="upstream model of the faulty fallback/small tiers (default: relabel only)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port, default=0, help="port to listen on (0: a free port)")
    parser.add_argument("--list-faults", action="store_true", help="print the router faults and exit")


def run(args) -> int:
    if args.list_faults:
        for name, text in sorted(ROUTER_FAULTS.items()):
            print(f"{name}: {text}")
        return 0
    if not args.upstream:
        print("conformance router: --upstream URL is required (the engine the router forwards to, "
              "e.g. --upstream http://127.0.0.1:8000)", file=sys.stderr)
        return 2
    try:
        config = RouterConfig(upstream=args.upstream, upstream_api=args.upstream_api, faults=tuple(args.fault),
                              model=args.model, fallback_model=args.fallback_model)
    except ValueError as exc:
        print(f"conformance router: {exc}", file=sys.stderr)
        return 2

    async def serve() -> None:
        runner, port = await _start_site(make_app(config), args.host, args.port)
        print(f"{LISTENING}http://{args.host}:{port}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0
