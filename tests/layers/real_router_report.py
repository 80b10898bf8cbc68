"""The translation probes through a REAL router (claude-code-router or LiteLLM) in front of the
reference engine: prints each probe's errors, mappings, what was lost, and the attribution.

    .venv/bin/python tests/layers/real_router_report.py ccr
    .venv/bin/python tests/layers/real_router_report.py litellm chat        # chat-completions upstream
    .venv/bin/python tests/layers/real_router_report.py litellm responses   # LiteLLM's default Responses path

Uses the routers installed by .ci/peers (install-ccr, install-litellm) under $PEERS_DIR (default
<repo>/.peers, as .ci/peers/lib.sh); the peers area runs them in CI. Every server stays on
127.0.0.1 and is stopped on exit. Findings measured here are in docs/layers.md.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import httpx  # noqa: E402
import router_stack as rs  # noqa: E402

from conformance.engine.launch import spawn_engine  # noqa: E402

PEERS = Path(os.environ.get("PEERS_DIR") or HERE.parents[1] / ".peers")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(url: str, path: str, timeout: float = 60) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        try:
            if httpx.get(url + path, timeout=2).status_code < 500:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def start_ccr(engine: str, port: int, work: Path) -> subprocess.Popen:
    (work / ".claude-code-router").mkdir(parents=True, exist_ok=True)
    config = {"PORT": port, "HOST": "127.0.0.1", "NON_INTERACTIVE_MODE": True, "LOG": False,
              "Providers": [{"name": "p", "api_base_url": engine + "/v1/chat/completions", "api_key": "x",
                             "models": ["reference-model"]}],
              "Router": {"default": "p,reference-model"}}
    (work / ".claude-code-router" / "config.json").write_text(json.dumps(config))
    cli = PEERS / "ccr/node_modules/@musistudio/claude-code-router/dist/cli.js"
    return subprocess.Popen(["node", str(cli), "start"], env={**os.environ, "HOME": str(work)},
                            stdout=open(work / "router.log", "w"), stderr=subprocess.STDOUT)


def start_litellm(engine: str, port: int, work: Path, mode: str) -> subprocess.Popen:
    config = work / "litellm.yaml"
    config.write_text("model_list:\n  - model_name: reference-model\n"
                      f"    litellm_params: {{model: openai/reference-model, api_base: {engine}/v1, api_key: x}}\n"
                      "general_settings: {master_key: sk-test}\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
    if mode == "chat":
        env["LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES"] = "True"
    rs.HEADERS["authorization"] = "Bearer sk-test"
    rs.HEADERS["x-api-key"] = "sk-test"
    return subprocess.Popen([str(PEERS / "litellm/bin/litellm"), "--config", str(config), "--host", "127.0.0.1",
                             "--port", str(port)], env=env, stdout=open(work / "router.log", "w"), stderr=subprocess.STDOUT)


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "ccr"
    mode = argv[1] if len(argv) > 1 else "chat"
    work = Path(tempfile.mkdtemp(prefix="real-router-"))
    with spawn_engine("--port", "0") as engine:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_ccr(engine.url, port, work) if which == "ccr" else start_litellm(engine.url, port, work, mode)
        try:
            if not wait(url, "/" if which == "ccr" else "/health/liveliness", 120):
                print(f"{which} did not come up; see {work / 'router.log'}")
                return 2
            rs.DEADLINES = rs.Deadlines(connect=5, first_content=30, total=60)
            for o in rs.observe(url, engine.url, injection=False):
                print(f"\n== {o.name}: HTTP {o.status}; errors {o.check_ids}")
                for v in o.violations:
                    print(f"   [{v.check_id}] {v.message} | expected {str(v.expected)[:120]} | seen {str(v.seen)[:160]}")
                print("   mappings:", o.mappings)
                print("   lost:", o.lost)
                if o.attribution:
                    print("   ", o.attribution.summary())
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
