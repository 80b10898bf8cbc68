"""CheckContext: what one conformance test uses to send, judge, record and fail.

Rules:
- A test sends through the context (so every exchange is kept for the failure folder), judges
  with `check_exchange` (or decides a check itself with `outcome`), then calls `finish()`.
- Every verdict becomes one results record per check (passed ones too); records are written at
  `finish()` (or at teardown if the test stopped early), carrying the failure folder's path.
- A test whose requests (none deliberately invalid) all went unanswered (no 2xx) and that found
  no error otherwise is not a pass: it records `suite.request.accepted` as an error quoting the
  first refusal, so the run's cause grouping counts it with the others that got that answer.
- A test with error violations raises ConformanceFailure: the message is `format_failure` (the
  one renderer), the folder `reports/failures/<test id>/` holds what reproduces it, and the
  JUnit properties (check id, client, client version, capture, severity) are set on the item.
- With the engine behind a router known (`engine_url`), a failing test is attributed to a layer
  (`conformance.layers.attribution.attribute_exchanges`, which returns data): the context hands
  it each exchange with the verdict it already has (its own `judge`; an exchange a test judged
  by itself is judged here, a deliberately invalid one by the error-answer rule) and applies the
  answer: the `layer:` line of the failure text, `layer` and `details["attribution"]` on the
  failed records, both sides' evidence in the failure folder (attribution-N.json / .txt).
- The stable test key (`test_replay.py::test_replay[claude-code/2.1.197/default]`) names results
  and baseline entries; it does not depend on where the suite is installed.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.checks import suite as suite_checks
from conformance.checks.error_answer import check_error_answer
from conformance.checks.exchange import ExchangeVerdict, check_exchange
from conformance.core.failures import SEVERITIES, Violation
from conformance.core.paths import captured_dir
from conformance.core.registry import violation
from conformance.core.results import Result
from conformance.core.verdict import RANK
from conformance.layers.attribution import JudgedExchange, LayerVerdict, attribute_exchanges
from conformance.net.client import serialize
from conformance.report.artifacts import write_failure_folder
from conformance.report.causes import error_message
from conformance.report.text import ConformanceFailure
from conformance.suite.config import SuiteConfig
from conformance.suite.session import Sent, SuiteSession
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect


def test_key(item) -> str:
    return f"{Path(str(item.path)).name}::{item.name}"


class CheckContext:
    def __init__(self, item, session: SuiteSession, settings: SuiteConfig) -> None:
        self.item = item
        self.session = session
        self.settings = settings
        self.key = test_key(item)
        self.client = ""
        self.client_version = ""
        self.case = ""
        self.capture = ""
        self.capture_path: Path | None = None
        self.api = ""
        self.model = ""
        self.exchanges: list[Sent] = []
        self._verdicts: dict[int, ExchangeVerdict] = {}  # id(sent) -> the verdict `judge` gave it
        self.violations: list[Violation] = []
        self._results: list[Result] = []
        self._outcomes: dict[str, str] = {}
        self._finished = False
        self._start = time.monotonic()
        self.extra: dict[str, str] = {}

    # ------------------------------------------------------------------ identity of the test
    def for_capture(self, capture) -> CheckContext:
        self.client, self.client_version, self.case = capture.client, capture.client_version, capture.case
        self.capture_path = Path(capture.path) if capture.path else None
        self.capture = _relative_capture(self.capture_path)
        mains = capture.main_exchanges()
        if mains:
            self.api = mains[0].request.api
        return self

    @property
    def test_id(self) -> str:
        """The failure folder's id: client/version/case/test for capture tests, else the test key."""
        func = getattr(self.item, "originalname", None) or self.item.name
        if self.client:
            return f"{self.client}/{self.client_version}/{self.case}/{func}"
        return self.key.replace("::", "/")

    # ------------------------------------------------------------------ sending and judging
    def send(self, api: str | Dialect, path: str, request: dict | bytes, *, captured_headers: dict | None = None,
             query: str = "", note: str = "", body: bytes | None = None, expect_error: bool = False) -> Sent:
        """Send `request` (dict re-serialised as the clients do, or `body` bytes verbatim) on the
        wire `api` names (a user's name is converted here, once)."""
        wire = dialect(api)
        data = body if body is not None else (request if isinstance(request, bytes) else serialize(request))
        raw = self.session.send(wire, path, data, captured_headers=captured_headers, query=query,
                                deadlines=self.settings.deadlines, label=f"{self.key} {note}".strip())
        sent = Sent(wire, path, request if isinstance(request, dict) else {}, raw, note, expect_error)
        self.exchanges.append(sent)
        return sent

    def judge(self, sent: Sent, *, expect_model: str | None = None, turn: int | None = None) -> ExchangeVerdict:
        verdict = check_exchange(sent.raw, sent.request, wire=sent.wire, expect_model=expect_model, turn=turn)
        self._verdicts[id(sent)] = verdict  # the exchange stays in self.exchanges, so its id stays its own
        self.add_verdict(verdict, turn=turn)
        if verdict.answered_model and not self.model:
            self.model = verdict.answered_model
        return verdict

    def add_verdict(self, verdict: ExchangeVerdict, *, turn: int | None = None) -> None:
        for check_id, outcome in verdict.outcomes.items():
            mine = [v for v in verdict.violations if v.check_id == check_id]
            self.outcome(check_id, outcome, violations=mine, message=verdict.notes.get(check_id, ""), turn=turn)

    # ------------------------------------------------------------------ verdicts
    def outcome(self, check_id: str, outcome: str, *, violations: list[Violation] | tuple = (),
                message: str = "", details: dict | None = None, turn: int | None = None) -> None:
        violations = list(violations)
        self.violations.extend(violations)
        if not message and violations:
            message = violations[0].message
        self._results.append(Result(
            test_id=self.key, check_id=check_id, outcome=outcome, api=self.api,
            model=self.model, client=self.client, client_version=self.client_version, case=self.case,
            capture=self.capture, turn=turn, message=message[:500],
            violations=[v.to_dict() for v in violations], details=dict(details or {}),
        ))
        if check_id not in self._outcomes or RANK[outcome] > RANK[self._outcomes[check_id]]:
            self._outcomes[check_id] = outcome

    def check(self, check_id: str, ok: bool, message: str, *, pass_message: str = "", turn: int | None = None,
              **violation_kwargs: Any) -> bool:
        """Record `check_id` as passed, or as failed with a violation built from the arguments."""
        if ok:
            self.outcome(check_id, "passed", message=pass_message, turn=turn)
        else:
            v = violation(check_id, message, turn=turn, **violation_kwargs)
            self.outcome(check_id, "failed" if v.is_error else "warning", violations=[v], turn=turn)
        return ok

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.is_error]

    def fail_target_down(self) -> None:
        reason = self.session.target_down() or "unknown"
        v = violation(suite_checks.TARGET_REACHABLE, f"the target is down; not tried (first failure: {reason})",
                      expected="a reachable target", seen="connection refused earlier in this run")
        self.outcome(suite_checks.TARGET_REACHABLE, "failed", violations=[v])
        self.finish("target down")

    # ------------------------------------------------------------------ the end of a test
    def reproduce(self) -> list[str]:
        target = self.session.config.target or "URL"
        lines = []
        if self.capture_path is not None:
            cmd = ["conformance", "replay", str(self.capture_path), "--target", target]
            for k, v in sorted(self.settings.model_map.items()):
                cmd += ["--model-map", f"{k}={v}"]
            if self.settings.salt:
                cmd.append("--salt")
            lines.append(" ".join(shlex.quote(c) for c in cmd))
        node = f"{Path(str(self.item.path)).resolve()}::{self.item.name}"
        py = ["pytest", f"--target={target}", node, "-p", "no:cacheprovider"]
        if self.settings.model:
            py.append(f"--conformance-model={self.settings.model}")
        lines.append(" ".join(shlex.quote(c) for c in py))
        return lines

    def finish(self, title: str | None = None) -> None:
        """Write the records, set the JUnit properties and raise ConformanceFailure on errors."""
        if self._finished:
            return
        self._finished = True
        errors = self.errors
        if not errors:
            refused = self._nothing_answered()
            if refused is not None:  # all "could not tell" because nothing answered: not a pass
                self.outcome(suite_checks.REQUEST_ACCEPTED, "error", violations=[refused])
                errors = self.errors
        folder = ""
        title = title or f"{self.item.name}: {len(errors)} violation(s)"
        reproduce = self.reproduce()
        if errors and self.settings.engine_url:
            # Router or engine? Replay the failing exchanges against the engine behind the router.
            self._apply(attribute_exchanges([self._judged(sent) for sent in self.exchanges], errors,
                                            self.settings.engine_url, deadlines=self.settings.deadlines))
        if errors:
            path = self.session.failure_dir(self.test_id)
            if self.exchanges:
                reproduce.append(f"sh {path / 'curl.sh'}")
            write_failure_folder(path, title=title, violations=self.violations, exchanges=self.exchanges,
                                 reproduce=reproduce, versions={**self.session.versions, **self._versions()},
                                 extra=self.extra)
            folder = str(path)
        duration = time.monotonic() - self._start
        for r in self._results:
            r.artifacts = folder if r.outcome in ("failed", "error") else ""
            r.duration_s = round(duration, 3)
            if not r.model:
                r.model = self.model
            self.session.record(r)
        self._set_properties(errors, folder)
        if errors:
            raise ConformanceFailure(title, self.violations, reproduce=reproduce,
                                     extra={**self.extra, **({"failure folder": folder} if folder else {})})

    def _nothing_answered(self) -> Violation | None:
        """A violation when the test sent requests (none deliberately invalid) and not one got a
        2xx answer: its verdicts, whatever they say, rest on nothing the target answered."""
        sent = [s for s in self.exchanges if not s.expect_error]
        if not sent or len(sent) != len(self.exchanges):
            return None
        if any(s.raw.status is not None and 200 <= s.raw.status < 300 for s in sent):
            return None
        raw = sent[0].raw
        body = " ".join(error_message(raw.body()[:65536].decode("utf-8", errors="replace")).split())
        seen = f"HTTP {raw.status}: {body}" if raw.status is not None else (raw.error or raw.error_kind or "no answer")
        return violation(suite_checks.REQUEST_ACCEPTED,
                         f"nothing answered: all {len(sent)} request(s) of this test were refused, so none of its "
                         f"checks could be decided ({seen[:160]})", expected="a 2xx answer", seen=seen[:300])

    def _judged(self, sent: Sent) -> JudgedExchange:
        """One exchange with the target's verdict on it: the one `judge` gave, else judged now."""
        wire = sent.wire
        expect = self.settings.served_model((sent.request or {}).get("model"))
        path = urlsplit(sent.raw.url).path
        if sent.expect_error and sent.raw.status is not None:
            # A deliberately invalid request: a refusal is right, so it is judged by the error-answer rule.
            return JudgedExchange(sent.request, wire, path, tuple(check_error_answer(sent.raw, wire)), expect,
                                  refusal=True)
        verdict = self._verdicts.get(id(sent))
        if verdict is None:
            verdict = check_exchange(sent.raw, sent.request, wire=wire, expect_model=expect)
        return JudgedExchange(sent.request, wire, path, tuple(verdict.violations), expect)

    def _apply(self, attributed: LayerVerdict | None) -> None:
        """The layer into the failure text and the failed records, the evidence into the folder."""
        if attributed is None:
            return
        self.extra["layer"] = attributed.line()
        folder = self.session.failure_dir(self.test_id)
        for n, att in enumerate(attributed.exchanges, 1):
            (folder / f"attribution-{n}.json").write_text(
                json.dumps(att.document(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            (folder / f"attribution-{n}.txt").write_text(att.evidence() + "\n", encoding="utf-8")
        for record in self._results:
            if record.outcome in ("failed", "error"):
                record.layer = attributed.layer
                record.details.setdefault("attribution", attributed.details())

    def flush(self) -> None:
        """Teardown safety: record what was decided even if the test stopped before finish()."""
        if not self._finished:
            self._finished = True
            for r in self._results:
                self.session.record(r)

    def _versions(self) -> dict[str, str]:
        out = {}
        if self.client:
            out["client"] = f"{self.client} {self.client_version}"
        return out

    def _set_properties(self, errors: list[Violation], folder: str) -> None:
        failing = sorted({v.check_id for v in errors})
        judged = sorted(self._outcomes)
        worst = min((v.severity for v in self.violations), key=SEVERITIES.index, default="")
        props = [
            ("check_id", ",".join(failing or judged)),
            ("client", self.client),
            ("client_version", self.client_version),
            ("capture", self.capture),
            ("severity", worst if self.violations else "none"),
        ]
        if folder:
            props.append(("failure_folder", folder))
        unverifiable = sorted(c for c, o in self._outcomes.items() if o == "unverifiable")
        if unverifiable:
            props.append(("unverifiable", ",".join(unverifiable)))
        self.item.user_properties.extend((k, v) for k, v in props if v)


def _relative_capture(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return str(Path(path).resolve().relative_to(captured_dir().resolve()))
    except (ValueError, FileNotFoundError):
        return str(path)
