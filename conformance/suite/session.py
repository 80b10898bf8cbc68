"""The suite session: one per pytest process, kept in `config.stash`.

Rules:
- Holds the resolved configuration, the results writer, what was learned about the target
  (served APIs, models, versions) and the target's health. Hooks and fixtures only delegate here.
- Fail fast: the first connect failure marks the target down (`target_down()` returns the first
  failure's text); a connection broken mid-response is followed by a quick connect probe, and a
  refused probe marks it down too. Every later `send` fails immediately with that text instead of
  waiting a timeout per test.
- `record(Result)` fills in what the session knows (target, API, versions) and appends to the
  results record; `failure_dir(test_id)` is `<report dir>/failures/<test id>/`, one folder per
  failing test, created on demand.
- Every network call has a deadline (the configured Deadlines, or short fixed ones for probes)
  and goes through the one sender, `conformance.net.target.Target` (URL joining, the client's
  headers, the Dialect's content-started predicate, the process's one TLS context).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.core.results import Result, ResultsWriter
from conformance.net.client import headers_for
from conformance.net.target import Target
from conformance.net.transport import Deadlines, RawExchange, probe
from conformance.suite.config import SuiteConfig
from conformance.wire.dialect import OPENAI, dialect

_PROBE = Deadlines(connect=3.0, first_content=5.0, total=8.0)
# Does an endpoint exist? An empty body is refused at once by a live endpoint; a target that
# hangs even on that is assumed to serve it (the tests then report the hang on their deadlines).
_API_PROBE = Deadlines(connect=3.0, first_content=3.0, total=3.0)


@dataclass
class Sent:
    """One exchange the suite made: what was sent (body as dict and bytes) and what came back."""

    api: str
    path: str
    request: dict[str, Any]
    raw: RawExchange
    note: str = ""
    expect_error: bool = False  # a deliberately invalid request: judged by checks.error_answer


def safe_component(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@+=-]+", "_", text).strip("._") or "_"


class SuiteSession:
    def __init__(self, config: SuiteConfig, *, worker: str | None = None) -> None:
        self.config = config
        self.worker = worker
        self._down: str | None = None
        self._lock = threading.Lock()
        self._writer: ResultsWriter | None = None
        self._models: list[str] | None = None
        self._apis: dict[str, bool] = {}
        # What the user told (in every process, xdist workers included); detection adds to it.
        from conformance import __version__

        told = {"engine": config.engine_version, "router": config.router_version}
        self.versions: dict[str, str] = {"suite": __version__, **{k: v for k, v in told.items() if v}}
        self.cli_layer: dict[str, Any] = {}
        self.baseline = None
        self.cache: dict[Any, Any] = {}  # per-process memo for tests that share an exchange

    # ------------------------------------------------------------------ results and artifacts
    @property
    def report_dir(self) -> Path:
        return Path(self.config.report_dir)

    @property
    def results_dir(self) -> Path:
        return self.report_dir / "results"

    def record(self, result: Result) -> Result:
        if not result.target:
            result.target = self.config.target or ""
        if not result.versions:
            result.versions = dict(self.versions)
        with self._lock:
            if self._writer is None:
                self._writer = ResultsWriter(self.results_dir, worker=self.worker)
        self._writer.write(result)
        return result

    def failure_dir(self, test_id: str) -> Path:
        parts = [safe_component(p) for p in test_id.split("/") if p]
        path = self.report_dir.joinpath("failures", *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    # ------------------------------------------------------------------ target health
    def target_down(self) -> str | None:
        return self._down

    def mark_down(self, reason: str) -> None:
        with self._lock:
            if self._down is None:
                self._down = reason

    @property
    def target(self) -> Target:
        """The configured target as the one sender (`conformance.net.target`) sees it."""
        return Target(self.config.target or "", self.config.api_key, self.config.deadlines)

    def send(
        self,
        api: str,
        path: str,
        body: bytes,
        *,
        captured_headers: dict[str, str] | None = None,
        query: str = "",
        deadlines: Deadlines | None = None,
        method: str = "POST",
        headers: dict[str, str] | None = None,
        label: str = "",
    ) -> RawExchange:
        """Send one request to the target with the client's headers, under the deadlines."""
        target = self.target
        url = target.url(path, query)
        down = self._down
        if down is not None:
            hdrs = headers if headers is not None else target.headers(api, captured_headers)
            return RawExchange(method, url, hdrs, body, error_kind="connect",
                               error=f"the target is down (first failure: {down}); not sent")
        raw = target.send_sync(api, path, body, method=method, query=query, captured_headers=captured_headers,
                               headers=headers, deadlines=deadlines)
        self._note_versions(raw)
        if raw.error_kind == "connect":
            self.mark_down(f"{label or url}: {raw.error}")
        elif raw.error_kind in ("read", "protocol"):
            reason = probe(self.config.target or url, timeout=2.0)
            if reason is not None and "connect" in reason.lower():
                self.mark_down(f"{label or url}: {raw.error}; then the target refused connections ({reason})")
        return raw

    def get_json(self, path: str) -> tuple[int | None, Any]:
        """GET a JSON document from the target (probe deadlines); (status, parsed or None)."""
        if self._down is not None:
            return None, None
        # The target's own documents (/v1/models, /version) take the key as a bearer token.
        hdrs = headers_for(OPENAI.name, self.config.api_key, {}) if self.config.api_key else {"accept-encoding": "identity"}
        raw = self.target.send_sync(None, path, method="GET", headers=hdrs, deadlines=_PROBE)
        self._note_versions(raw)
        if raw.status is None:
            if raw.error_kind == "connect":
                self.mark_down(f"GET {path}: {raw.error}")
            return None, None
        try:
            return raw.status, json.loads(raw.body().decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return raw.status, None

    # ------------------------------------------------------------------ what the target serves
    def models(self) -> list[str]:
        """Model ids from the target's GET /v1/models (empty when it has none)."""
        if self._models is None:
            status, doc = self.get_json("/v1/models")
            ids: list[str] = []
            if status == 200 and isinstance(doc, dict) and isinstance(doc.get("data"), list):
                ids = [m.get("id") for m in doc["data"] if isinstance(m, dict) and m.get("id")]
                owners = [m.get("owned_by") for m in doc["data"] if isinstance(m, dict) and m.get("owned_by")]
                if owners:  # vLLM says "vllm", llama.cpp "llamacpp": the engine's name, not its version
                    self.versions.setdefault("engine", f"{owners[0]} (owned_by in /v1/models)")
            self._models = ids
        return self._models

    def model_for(self, captured: str | None, settings: SuiteConfig | None = None) -> str | None:
        """The model to send: --conformance-model, else the captured one if the target serves it
        (or lists no models), else the first model the target lists."""
        cfg = settings or self.config
        if cfg.model:
            return cfg.model
        listed = self.models()
        if not listed or captured in listed or (captured and captured in cfg.model_map):
            return captured
        return listed[0]

    def serves(self, api: str) -> bool:
        """Does the target serve this API? Fixed by --conformance-api, else probed once."""
        if self.config.api != "auto":
            return api == self.config.api
        if api not in self._apis:
            path = dialect(api).generation_path
            cap = min(_API_PROBE.total, self.config.deadline_total)
            raw = self.send(api, path, b"{}", deadlines=Deadlines(_API_PROBE.connect, cap, cap), label=f"probe {path}")
            # An endpoint that exists rejects an empty body with 4xx (400/422) or answers; a missing
            # one gives 404/405/501. A dead target is reported by the tests themselves.
            self._apis[api] = raw.status is None or raw.status not in (404, 405, 501)
        return self._apis[api]

    # ------------------------------------------------------------------ versions
    def _note_versions(self, raw: RawExchange) -> None:
        h = raw.response_headers
        for name, key in (("server", "server header"), ("x-litellm-version", "router"), ("x-conformance-engine", "engine")):
            if h.get(name) and key not in self.versions:
                self.versions[key] = h[name]

    def detect_versions(self) -> dict[str, str]:
        """Versions the target tells (vLLM GET /version, response headers), then the user's text."""
        if self.config.target and self._down is None:
            status, doc = self.get_json("/version")
            if status == 200 and isinstance(doc, dict) and doc.get("version"):
                self.versions["engine"] = f"{doc['version']} (GET /version)"
            self.models()
        if self.config.engine_version:
            self.versions["engine"] = self.config.engine_version
        if self.config.router_version:
            self.versions["router"] = self.config.router_version
        return self.versions
