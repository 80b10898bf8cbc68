"""The suite session: one per pytest process, kept in `config.stash`.

Rules:
- Holds the resolved configuration, the results writer, what was learned about the target
  (served APIs, models, versions) and the target's health. Hooks and fixtures only delegate here.
- Fail fast: the first connect failure marks the target down (`target_down()` returns the first
  failure's text); a connection broken mid-response is followed by a quick connect probe, and a
  refused probe marks it down too. Every later `send` fails immediately with that text instead of
  waiting a timeout per test.
- Hung target, bounded run: after `hang_after` (option `--conformance-hang-after`, default
  HANG_AFTER; 0 turns it off) consecutive exchanges that hit a deadline before any content, the
  session sends one minimal request (the wire's one-turn request, 16 output tokens, under
  MINIMAL_DEADLINES capped by the configured ones). If that answers, the count restarts and every
  test keeps its own verdict (a target that hangs only on some requests). If it hangs too, the
  target is marked hung: every later `send` returns at once, with the deadline kind the minimal
  request hit and a text naming the hang, the first test that saw it and how to turn this off.
  Only the suite's own test exchanges count: the endpoint probes here (label `probe ...`) and the
  load and context probes (which send through `conformance.probes`, not this session) do not.
  Arithmetic (docs/contracts/options.md): K x first-content deadline + the minimal request's
  first-content deadline, 3 x 60 s + 20 s = 200 s, before the remaining tests fail fast.
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

from conformance import __version__
from conformance.core.bounded_json import parse as parse_json
from conformance.core.results import Result, ResultsWriter
from conformance.net.client import headers_for
from conformance.net.target import Target
from conformance.net.transport import Deadlines, Limits, RawExchange, probe
from conformance.suite.config import SuiteConfig
from conformance.wire import CHAT
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect

_PROBE = Deadlines(connect=3.0, first_content=5.0, total=8.0)
# Does an endpoint exist? An empty body is refused at once by a live endpoint; a target that
# hangs even on that is assumed to serve it (the tests then report the hang on their deadlines).
_API_PROBE = Deadlines(connect=3.0, first_content=3.0, total=3.0)
# Hung-target fail-fast (module rules). K = 3: one hung exchange is a slow request, two can be
# bad luck with a queue; three in a row with nothing else in between is worth one cheap question.
HANG_AFTER = 3
_HANG_KINDS = frozenset({"deadline_first_byte", "deadline_first_content", "deadline_total"})
# The minimal request: 16 tokens of a one-line prompt; any live target starts that within 20 s.
MINIMAL_DEADLINES = Deadlines(connect=10.0, first_content=20.0, total=40.0)


@dataclass
class Sent:
    """One exchange the suite made: what was sent (body as dict and bytes) and what came back."""

    wire: Dialect
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
        self._served: dict[str, bool] = {}  # wire name -> served (probed once)
        # --conformance-api: the one wire the user said the target serves (None: auto, probed)
        self.forced_wire: Dialect | None = None if config.api == "auto" else dialect(config.api)
        # What the user told (in every process, xdist workers included); detection adds to it.
        told = {"engine": config.engine_version, "router": config.router_version}
        self.versions: dict[str, str] = {"suite": __version__, **{k: v for k, v in told.items() if v}}
        self.cli_layer: dict[str, Any] = {}
        self.baseline = None
        self.cache: dict[Any, Any] = {}  # per-process memo for tests that share an exchange
        self._hang_run = 0  # consecutive test exchanges that hit a deadline with no content
        self._hang_first = ""  # the first of them: "<label>: <its error>"
        self._hung: tuple[str, str] | None = None  # (deadline kind, text) once confirmed

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
    def limits(self) -> Limits:
        """The size caps (`--conformance-max-{response,line,event}-bytes`, else the defaults)."""
        d = Limits()
        return Limits(int(self.config.option("max_response_bytes", d.response_bytes)),
                      int(self.config.option("max_line_bytes", d.line_bytes)),
                      int(self.config.option("max_event_bytes", d.event_bytes)))

    @property
    def target(self) -> Target:
        """The configured target as the one sender (`conformance.net.target`) sees it."""
        return Target(self.config.target or "", self.config.api_key, self.config.deadlines, self.limits)

    def send(
        self,
        wire: Dialect | None,
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
        """Send one request on `wire` (None: a request of no wire) to the target with the client's
        headers, under the deadlines."""
        target = self.target
        url = target.url(path, query)
        down = self._down
        if down is not None:
            hdrs = headers if headers is not None else target.headers(wire, captured_headers)
            return RawExchange(method, url, hdrs, body, error_kind="connect",
                               error=f"the target is down (first failure: {down}); not sent")
        hung = self._hung
        if hung is not None:
            hdrs = headers if headers is not None else target.headers(wire, captured_headers)
            return RawExchange(method, url, hdrs, body, error_kind=hung[0], error=hung[1])
        raw = target.send_sync(wire, path, body, method=method, query=query, captured_headers=captured_headers,
                               headers=headers, deadlines=deadlines)
        self._note_versions(raw)
        if not label.startswith("probe "):
            self._count_hang(wire, body, raw, label or f"{method} {url}")
        if raw.error_kind == "connect":
            self.mark_down(f"{label or url}: {raw.error}")
        elif raw.error_kind in ("read", "protocol"):
            reason = probe(self.config.target or url, timeout=2.0)
            if reason is not None and "connect" in reason.lower():
                self.mark_down(f"{label or url}: {raw.error}; then the target refused connections ({reason})")
        return raw

    # ------------------------------------------------------------------ hung target
    def target_hung(self) -> str | None:
        """The text every later exchange fails with once the target is known to hang, else None."""
        return self._hung[1] if self._hung is not None else None

    def _hang_after(self) -> int:
        value = self.config.option("hang_after", HANG_AFTER)
        return int(value)

    def _count_hang(self, wire: Dialect | None, body: bytes, raw: RawExchange, label: str) -> None:
        k = self._hang_after()
        if k <= 0:
            return
        with self._lock:
            if raw.error_kind not in _HANG_KINDS or raw.first_content_at is not None:
                self._hang_run, self._hang_first = 0, ""
                return
            self._hang_run += 1
            if self._hang_run == 1:
                self._hang_first = f"{label}: {raw.error}"
            if self._hang_run < k:
                return
            run, first = self._hang_run, self._hang_first
            self._hang_run, self._hang_first = 0, ""
        minimal = self._minimal_request(wire or CHAT, body)
        if minimal.error_kind not in _HANG_KINDS or minimal.first_content_at is not None:
            return  # it answers: the hangs were those requests' own; every test keeps its verdict
        off = "--conformance-hang-after 0"
        text = (f"not sent: the target hangs. {run} exchanges in a row hit a deadline with no content, "
                f"the first in {first}; then a minimal one-turn request hung too ({minimal.error}). "
                f"The remaining exchanges fail at once instead of waiting a deadline each "
                f"(to wait on every one anyway: {off})")
        with self._lock:
            if self._hung is None:
                self._hung = (minimal.error_kind or "deadline_total", text)

    def _minimal_request(self, wire: Dialect, sent_body: bytes) -> RawExchange:
        """The smallest streamed one-turn request on `wire` (the model of the hung request)."""
        model = None
        try:
            parsed = parse_json(sent_body or b"{}")
            model = parsed.get("model") if isinstance(parsed, dict) else None
        except ValueError:
            pass
        model = model or self.model_for(None) or "model"
        request = wire.one_turn_request(model, "Answer in one word.", "Say ok.", max_tokens=16, stream=True)
        mine = self.config.deadlines
        deadlines = Deadlines(min(mine.connect, MINIMAL_DEADLINES.connect),
                              min(mine.first_content, MINIMAL_DEADLINES.first_content),
                              min(mine.total, MINIMAL_DEADLINES.total))
        data = json.dumps(request, separators=(",", ":")).encode()
        return self.target.send_sync(wire, wire.generation_path, data, deadlines=deadlines)

    def _ask_the_engine(self, engine_url: str) -> None:
        """The engine behind the router names itself: its GET /version, else its /v1/models owned_by."""
        engine = Target(engine_url, None, _PROBE)
        for path in ("/version", "/v1/models"):
            raw = engine.send_sync(None, path, method="GET", headers={"accept-encoding": "identity"}, deadlines=_PROBE)
            if raw.response_headers.get("x-conformance-engine"):
                self.versions["engine"] = raw.response_headers["x-conformance-engine"]
                return
            try:
                doc = json.loads(raw.body().decode("utf-8")) if raw.status == 200 else None
            except (UnicodeDecodeError, ValueError):
                doc = None
            if path == "/version" and isinstance(doc, dict) and doc.get("version"):
                self.versions["engine"] = f"{doc['version']} (the engine's GET /version)"
                return
            data = doc.get("data") if isinstance(doc, dict) else None
            owners = [m.get("owned_by") for m in data or [] if isinstance(m, dict) and m.get("owned_by")]
            if owners:
                self.versions["engine"] = f"{owners[0]} (owned_by in the engine's /v1/models)"
                return

    def get_json(self, path: str) -> tuple[int | None, Any]:
        """GET a JSON document from the target (probe deadlines); (status, parsed or None)."""
        if self._down is not None:
            return None, None
        # The target's own documents (/v1/models, /version) take the key as a bearer token.
        hdrs = headers_for(CHAT, self.config.api_key, {}) if self.config.api_key else {"accept-encoding": "identity"}
        raw = self.target.send_sync(None, path, method="GET", headers=hdrs, deadlines=_PROBE)
        self._note_versions(raw)
        if raw.status is None:
            if raw.error_kind == "connect":
                self.mark_down(f"GET {path}: {raw.error}")
            return None, None
        try:
            return raw.status, parse_json(raw.body())
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
                # vLLM says "vllm", llama.cpp "llamacpp": the engine's name, not its version; a
                # router's owned_by is the router's word (LiteLLM says "openai"), never the engine's
                if owners and not self.config.engine_url and "router" not in self.versions:
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

    def serves(self, wire: Dialect) -> bool:
        """Does the target serve this wire? Fixed by --conformance-api, else probed once."""
        if self.forced_wire is not None:
            return wire is self.forced_wire
        if wire.name not in self._served:
            path = wire.generation_path
            cap = min(_API_PROBE.total, self.config.deadline_total)
            raw = self.send(wire, path, b"{}", deadlines=Deadlines(_API_PROBE.connect, cap, cap), label=f"probe {path}")
            # An endpoint that exists rejects an empty body with 4xx (400/422) or answers; a missing
            # one gives 404/405/501. A dead target is reported by the tests themselves.
            self._served[wire.name] = raw.status is None or raw.status not in (404, 405, 501)
        return self._served[wire.name]

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
        if self.config.engine_url and "engine" not in self.versions:
            self._ask_the_engine(self.config.engine_url)
        if self.config.engine_version:
            self.versions["engine"] = self.config.engine_version
        if self.config.router_version:
            self.versions["router"] = self.config.router_version
        return self.versions
