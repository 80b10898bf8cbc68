"""Bring one peer stack up by hand, print its URLs, keep it up until Ctrl-C (or --seconds).

    python -m conformance.peers.up litellm-chat-engine
    # URL=http://127.0.0.1:PORT   (the router or engine the suite targets)
    # ENGINE=http://127.0.0.1:PORT

The repro commands in fixtures/peers/*.json and the README use `$URL` from this. Needs the
installs of .ci/peers/run-all. Every server is stopped on exit.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time

from conformance.peers import components
from conformance.peers.run import missing_installs, router_for
from conformance.peers.stacks import STACKS, by_name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.peers.up", description=__doc__.split("\n\n")[0])
    ap.add_argument("stack", choices=[s.name for s in STACKS])
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)")
    args = ap.parse_args(argv)
    stack = by_name(args.stack)
    missing = missing_installs(stack)
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2

    def _terminate(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    model = components.REAL_MODEL if stack.real_model else components.ENGINE_MODEL
    with contextlib.ExitStack() as es:
        engine = {"reference": components.engine, "llamacpp": components.llamacpp, "vllm": components.vllm}[stack.engine]()
        es.enter_context(engine)
        router = router_for(stack, engine.base_url, model)
        if router is not None:
            es.enter_context(router)
        url = router.base_url if router is not None else engine.base_url
        print(f"URL={url}\nENGINE={engine.base_url}\nMODEL={model}\n# {stack.title}; Ctrl-C stops it", flush=True)
        try:
            deadline = time.monotonic() + args.seconds if args.seconds else None
            while deadline is None or time.monotonic() < deadline:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
