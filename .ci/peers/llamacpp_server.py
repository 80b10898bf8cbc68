"""Serve a GGUF model with llama.cpp's own HTTP server (PyPI xllamacpp) on 127.0.0.1.

Run with the interpreter of the xllamacpp venv:
    python llamacpp_server.py --model FILE.gguf --port PORT --template gemma-tools.jinja [--alias NAME]
The server runs in this process; it serves /health, /v1/models, /v1/chat/completions,
/v1/messages (Anthropic) and /v1/responses until SIGTERM/SIGINT. Recipe: ../shared/design/PEERS.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--template", required=True, help="Jinja chat template file (renders tools)")
    ap.add_argument("--alias", default="gemma3-270m")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    p.model_alias = [args.alias]  # a set of names: a bare string would become its characters
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.use_jinja = True
    p.chat_template = Path(args.template).read_text(encoding="utf-8")
    p.offline = True
    # Verdicts are compared run to run, so greedy decoding must repeat: reusing a cached prompt
    # prefix evaluates the rest in other batches, and the last-bit float differences change
    # which token wins at temperature 0 (seen: one request, two different answers). Every
    # request is evaluated whole (a few seconds for a trimmed capture).
    p.cache_prompt = False
    p.cache_ram_mib = 0
    p.cache_idle_slots = False
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    server = xlc.Server(p)  # noqa: F841 - serving lives as long as this object

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"llama.cpp server {xlc.__version__} on http://127.0.0.1:{args.port}", flush=True)
    while not stop.wait(1.0):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
