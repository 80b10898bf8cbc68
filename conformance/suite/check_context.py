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
  failed records, both sides' evidence in the failure folder (attribution-N.json / .txt). The
  engine's received-log total is read before the test's first send, and each exchange carries the
  hash of the bytes it sent: attribution matches it only to what reached the engine since, by
  content (`conformance.layers.hop.reached_engine`).
- An exception that escapes a test (`record_exception`, from the plugin's report hook) is a
  recorded failure of `suite.judge.no_exception` with its failure folder, so a test that crashed
  is in the results, summary.md, report.html and junit like any other failure.
- The reproduce lines (`conformance.report.reproduce`) carry what shaped the requests: the models
  sent for the captured ones, the expected models, the salt, the deadlines, the run's options; the
  key only as `"$CONFORMANCE_API_KEY"`.
- The stable test key (`test_replay.py::test_replay[claude-code/2.1.197/default]`) names results
  and baseline entries; it does not depend on where the suite is installed.
"""

from __future__ import annotations

import json
import time
import traceback
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
from conformance.core.secrets import scrub_text
from conformance.core.verdict import RANK
from conformance.layers.attribution import JudgedExchange, LayerVerdict, attribute_exchanges
from conformance.layers.hop import body_sha256, log_total
from conformance.net.client import serialize
from conformance.net.transport import Deadlines
from conformance.report.artifacts import write_failure_folder
from conformance.report.causes import error_message
from conformance.report.reproduce import command_line, pytest_line, replay_line
from conformance.report.text import ConformanceFailure
from conformance.suite.config import SuiteConfig, raw_options
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
        self.captured_models: list[str] = []  # the models the capture's requests name
        self.api = ""
        self.model = ""
        self.exchanges: list[Sent] = []
        self._verdicts: dict[int, ExchangeVerdict] = {}  # id(sent) -> the verdict `judge` gave it
        self.violations: list[Violation] = []
        self._results: list[Result] = []
        self._outcomes: dict[str, str] = {}
        self._finished = False
        self._recorded = 0  # how many of self._results the session has recorded
        self._start = time.monotonic()
        self.extra: dict[str, str] = {}
        self._log_since: int | None = None  # the engine's received-log total before this test's first send
        self._since: dict[int, int | None] = {}  # id(sent) -> _log_since, for the exchanges sent here

    # ------------------------------------------------------------------ identity of the test
    def for_capture(self, capture) -> CheckContext:
        self.client, self.client_version, self.case = capture.client, capture.client_version, capture.case
        self.capture_path = Path(capture.path) if capture.path else None
        self.captured_models = sorted({str(e.request.body["model"]) for e in capture.main_exchanges()
                                       if isinstance(e.request.body, dict) and e.request.body.get("model")})
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
        if self.settings.engine_url and not self._since:  # what reaches the engine from here on is this test's
            self._log_since = self._engine_log_total(self.settings.engine_url)
        data = body if body is not None else (request if isinstance(request, bytes) else serialize(request))
        raw = self.session.send(wire, path, data, captured_headers=captured_headers, query=query,
                                deadlines=self.settings.deadlines, label=f"{self.key} {note}".strip())
        sent = Sent(wire, path, request if isinstance(request, dict) else {}, raw, note, expect_error)
        self.exchanges.append(sent)
        self._since[id(sent)] = self._log_since  # an exchange reused from another test has no window
        return sent

    def _engine_log_total(self, engine_url: str) -> int | None:
        """The engine's received-log total; an engine without the log is asked once per run."""
        absent = ("no received log", engine_url)
        if self.session.cache.get(absent):
            return None
        total = log_total(engine_url)
        if total is None:
            self.session.cache[absent] = True
        return total

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
        """The replay and pytest lines (`conformance.report.reproduce`): what shaped the requests
        (the models sent for the captured ones, the salt, the deadlines, every conformance option)
        and the key read from its environment variable."""
        target = self.session.config.target or "URL"
        settings, with_key = self.settings, bool(self.settings.api_key)
        lines = []
        if self.capture_path is not None:
            sent = {m: self.session.model_for(m, settings) for m in self.captured_models}
            deadlines = settings.deadlines
            lines.append(replay_line(
                str(self.capture_path), target, model_map={m: s for m, s in sent.items() if s and s != m},
                salt=settings.run_token if settings.salt else None, with_key=with_key,
                expect={s: served for s in set(sent.values()) if s and (served := settings.served_model(s)) != s},
                deadlines=None if deadlines == Deadlines() else (deadlines.connect, deadlines.first_content,
                                                                 deadlines.total)))
        node = f"{Path(str(self.item.path)).resolve()}::{self.item.name}"
        config = getattr(self.item, "config", None)  # a pytest item has one; the options are its
        options = dict(raw_options(config) if config is not None else {}, conformance_target=target)
        markexpr = getattr(config.option, "markexpr", "") if config is not None else ""
        lines.append(pytest_line(node, options, markexpr=markexpr or "", with_key=with_key))
        return lines

    def finish(self, title: str | None = None) -> None:
        """Write the records, set the JUnit properties and raise ConformanceFailure on errors."""
        if self._finished:
            return
        self._finished = True
        title, folder, reproduce = self._conclude(title)
        if self.errors:
            raise ConformanceFailure(title, self.violations, reproduce=reproduce,
                                     extra={**self.extra, **({"failure folder": folder} if folder else {})})

    def record_exception(self, exc: BaseException) -> str:
        """An exception escaped the test: a failed record of suite.judge.no_exception beside what
        was decided before it, and the failure folder (its path is returned)."""
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8)
        self.extra["exception"] = "".join(frames).rstrip()[-4000:]
        v = violation(suite_checks.NO_EXCEPTION, f"{type(exc).__name__} escaped the test: {str(exc)[:300]}",
                      expected="a verdict for every exchange", seen=f"{type(exc).__name__}: {str(exc)[:300]}")
        self.outcome(suite_checks.NO_EXCEPTION, "error", violations=[v])
        self._finished = True
        _title, folder, _reproduce = self._conclude(f"{self.item.name}: {type(exc).__name__} escaped the test")
        return folder

    def _conclude(self, title: str | None) -> tuple[str, str, list[str]]:
        """Write the failure folder (on errors) and the records not written yet; set the JUnit
        properties. (title, folder or "", the reproduce lines)."""
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
                reproduce.append(command_line(["sh", str(path / "curl.sh")]))
            write_failure_folder(path, title=title, violations=self.violations, exchanges=self.exchanges,
                                 reproduce=reproduce, versions={**self.session.versions, **self._versions()},
                                 extra=self.extra)
            folder = str(path)
        duration = time.monotonic() - self._start
        for r in self._results[self._recorded:]:
            r.artifacts = folder if r.outcome in ("failed", "error") else ""
            r.duration_s = round(duration, 3)
            if not r.model:
                r.model = self.model
            self.session.record(r)
        self._recorded = len(self._results)
        self._set_properties(errors, folder)
        return title, folder, reproduce

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
                                  refusal=True, sent_sha256=body_sha256(sent.raw.request_body), since=self._since.get(id(sent)))
        verdict = self._verdicts.get(id(sent))
        if verdict is None:
            verdict = check_exchange(sent.raw, sent.request, wire=wire, expect_model=expect)
        return JudgedExchange(sent.request, wire, path, tuple(verdict.violations), expect,
                              sent_sha256=body_sha256(sent.raw.request_body), since=self._since.get(id(sent)))

    def _apply(self, attributed: LayerVerdict | None) -> None:
        """The layer into the failure text and the failed records, the evidence into the folder."""
        if attributed is None:
            return
        self.extra["layer"] = attributed.line()
        folder = self.session.failure_dir(self.test_id)
        for n, att in enumerate(attributed.exchanges, 1):
            (folder / f"attribution-{n}.json").write_text(
                scrub_text(json.dumps(att.document(), ensure_ascii=False, indent=1) + "\n"), encoding="utf-8")
            (folder / f"attribution-{n}.txt").write_text(scrub_text(att.evidence() + "\n"), encoding="utf-8")
        for record in self._results:
            if record.outcome in ("failed", "error"):
                record.layer = attributed.layer
                record.details.setdefault("attribution", attributed.details())

    def flush(self) -> None:
        """Teardown safety: record what was decided even if the test stopped before finish()."""
        if not self._finished:
            self._finished = True
            for r in self._results[self._recorded:]:
                self.session.record(r)
            self._recorded = len(self._results)

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
