"""What the plugin's hooks do, kept out of plugin.py so the entry point stays a few lines each.

Rules:
- `configure` builds the SuiteSession only when a target is given (the plugin is inert
  otherwise), and makes the bundled suite the collected path when the user named none.
- The controller process (no xdist `workerinput`) owns the report folder: it clears the
  previous run's results at the start and writes summary.md, report.html, results/run.json (the
  run's settings, for `conformance report compare`), the baseline file and the testsuite
  properties; workers only append results. Progress lines of the probes reach the terminal past
  the capture in the controller (`conformance.probes.progress`).
- The run's secrets (the key, URL credentials, key environment variables) are registered with the
  one scrubber (`conformance.core.secrets`) in `configure`, in every process; the test reports
  (failure text, captured output, properties) are scrubbed before pytest shows or writes them,
  and junit.xml once more after pytest wrote it.
- The baseline gate works per test in `apply_baseline`: a test failing exactly as the baseline
  lists is reported xfailed with the reason; any other difference fails the test.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

import pytest

from conformance.core import secrets
from conformance.core.results import read_results
from conformance.probes import progress
from conformance.report.artifacts import ReportDirError
from conformance.report.artifacts import prepare as prepare_report_dir
from conformance.report.baseline import BaselineError
from conformance.report.baseline import compare as compare_with_baseline
from conformance.report.baseline import load as load_baseline
from conformance.report.baseline import write as write_baseline
from conformance.report.causes import MAX_SHOWN, SETUP_KINDS, from_results, headline_lines
from conformance.report.compare import write_run_settings
from conformance.report.html import write_html
from conformance.report.summary import write_summary
from conformance.report.text import ConformanceFailure
from conformance.suite.cases import all_cases, capture_wire, not_served_reason
from conformance.suite.check_context import CheckContext, test_key
from conformance.suite.config import ConfigError, SuiteConfig, cli_layer, raw_options
from conformance.suite.preflight import check_target
from conformance.suite.session import SuiteSession


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def configure(config: pytest.Config, key, suite_dir: Path) -> None:
    cli = cli_layer(config)
    if not cli.get("target"):
        return
    # the run's secrets, once per process and before anything can print: every report, folder and
    # console line is scrubbed of them (a bad setting's message may quote the target URL)
    secrets.register(api_key=cli.get("api_key"),
                     urls={"target": cli.get("target"), "engine": cli.get("engine_url"),
                           "metrics": config.getoption("conformance_metrics_url", None)})
    try:
        base = SuiteConfig.resolve(cli)
        baseline = None
        if base.baseline is not None:
            try:
                baseline = load_baseline(base.baseline)
            except BaselineError as exc:
                raise ConfigError(str(exc)) from None
    except ConfigError as exc:
        raise pytest.UsageError(secrets.scrub_text(f"conformance: {exc}")) from None
    workerinput = getattr(config, "workerinput", None)
    token = (workerinput or {}).get("conformance_run_token") or os.environ.get("CONFORMANCE_RUN_TOKEN") \
        or uuid.uuid4().hex[:12]
    base = base.replace(run_token=token, raw_options=raw_options(config))
    session = SuiteSession(base, worker=(workerinput or {}).get("workerid"))
    session.cli_layer = {k: v for k, v in cli.items() if v is not None}
    session.baseline = baseline
    config.stash[key] = session
    # xdist workers receive the invocation arguments, not the controller's config.args, so every
    # process makes the same choice.
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(suite_dir)]
    session.runs_bundled_suite = any(_in_suite(arg, suite_dir) for arg in config.args)
    if _is_controller(config) and not config.getoption("collectonly", False):
        try:
            prepare_report_dir(session.report_dir)
        except ReportDirError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from None
    if workerinput is None:
        _progress_past_capture(config)


def _in_suite(arg: str, suite_dir: Path) -> bool:
    path = Path(arg.split("::", 1)[0]).resolve()
    return path == suite_dir or suite_dir in path.parents


def _progress_past_capture(config: pytest.Config) -> None:
    """The long probes' progress lines reach the terminal while pytest captures the test's output
    (xdist workers have no terminal: their lines stay in the captured output)."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        return

    def sink(line: str) -> None:
        with capman.global_and_fixture_disabled():
            sys.stderr.write(secrets.scrub_text(progress.PREFIX + line) + "\n")
            sys.stderr.flush()

    progress.set_sink(sink)


def configure_node(node, key) -> None:
    session = node.config.stash.get(key, None)
    if session is not None:
        node.workerinput["conformance_run_token"] = session.config.run_token


def sessionstart(pytest_session: pytest.Session, session: SuiteSession) -> None:
    if not _is_controller(pytest_session.config):
        return
    # the pre-flight guards the bundled suite; a project's own tests may not need the target at all
    # nor does a collection-only run, which sends nothing
    needs_target = getattr(session, "runs_bundled_suite", False) and not pytest_session.config.option.collectonly
    try:
        cause = check_target(session) if needs_target else None
    except Exception:  # noqa: BLE001 - whatever the target sent, the pre-flight only ever lets the run go on
        cause = None  # the tests then meet the same bytes and record them as verdicts
    if cause is not None:  # nothing would answer: one line and exit 2, not one failure per test
        session.preflight_cause = cause
        pytest.exit(secrets.scrub_text(f"conformance: {cause.line()}"), returncode=2)
    session.detect_versions()
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest internals moved
        return
    xml = pytest_session.config.stash.get(xml_key, None)
    if xml is None:
        return
    facts = run_facts(session)
    props = {
        "target": facts["target"],
        "api": facts["api"],
        "model": facts["model"],
        "engine_version": facts["engine"],
        "router_version": facts["router"],
        "suite_version": facts["suite"],
        "run_token": session.config.run_token,
    }
    for name, value in props.items():
        xml.add_global_property(name, secrets.scrub_text(value))


def deselect_opt_in(config: pytest.Config, items: list, suite_dir: Path, markers: tuple[str, ...]) -> None:
    """Leave out the opt-in markers (live, load, context, ...) of the bundled suite unless the -m
    expression names them. Only naming counts: an unrelated -m (a project's own addopts such as
    `-m 'not slow'`, or `-m 'not loop'`) must not switch the opt-in areas on."""
    named = set(re.findall(r"[A-Za-z_][\w-]*", config.getoption("markexpr", "") or ""))
    markers = tuple(m for m in markers if m not in named)
    if not markers:
        return
    keep, drop = [], []
    for item in items:
        in_suite = suite_dir in Path(str(item.path)).resolve().parents
        if in_suite and any(item.get_closest_marker(m) for m in markers):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def settings_for(node, session: SuiteSession, overrides: dict | None) -> SuiteConfig:
    """marker > command line > fixture override > default."""
    marker: dict = {}
    for mark in reversed(list(node.iter_markers("conformance"))):  # closest last, so it wins
        marker.update(mark.kwargs)
    try:
        resolved = SuiteConfig.resolve(overrides or {}, session.cli_layer, marker)
    except ConfigError as exc:
        pytest.fail(f"conformance settings of {node.nodeid}: {exc}", pytrace=False)
    return resolved.replace(run_token=session.config.run_token, raw_options=session.config.raw_options)


def context_for(node, session: SuiteSession, settings: SuiteConfig) -> CheckContext:
    """The CheckContext of one test (the `conformance_ctx` fixture)."""
    return CheckContext(node, session, settings)


# ----------------------------------------------------------------------------- reports and gate
def on_call_report(item, call, report, session: SuiteSession) -> None:
    """A ConformanceFailure is shown as its formatted text (no traceback of the suite's own code),
    then the baseline gate applies."""
    exc = call.excinfo.value if call.excinfo is not None else None
    if report.failed and isinstance(exc, ConformanceFailure):
        report.longrepr = str(exc)
    elif report.failed and exc is not None and not isinstance(exc, pytest.fail.Exception):
        record_exception(item, exc, report)
    apply_baseline(item, call, report, session)


def record_exception(item, exc: BaseException, report) -> None:
    """An exception that escaped a test with a CheckContext becomes its recorded failure (a
    results record and a failure folder), so the test is in every report, not only junit."""
    ctx = getattr(item, "funcargs", {}).get("conformance_ctx")
    if not isinstance(ctx, CheckContext):
        return
    try:
        folder = ctx.record_exception(exc)
    except Exception as again:  # noqa: BLE001 - the report hook must not raise: the traceback is already shown
        report.sections.append(("conformance", f"the failure could not be recorded: {again!r}"))
        return
    if folder:
        report.sections.append(("conformance", f"failure folder: {folder}"))

def scrub_report(report) -> None:
    """A test report without the run's secrets, before pytest shows it or writes it to junit.xml:
    the failure text, the captured output and the properties (the structured longrepr becomes
    its text only when a secret was in it)."""
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason), a shape pytest relies on
        report.longrepr = tuple(secrets.scrub_text(x) if isinstance(x, str) else x for x in report.longrepr)
    elif report.longrepr is not None:
        text = str(report.longrepr)
        scrubbed = secrets.scrub_text(text)
        if scrubbed != text:
            report.longrepr = scrubbed
    report.sections = [(name, secrets.scrub_text(text)) for name, text in report.sections]
    report.user_properties = [(k, secrets.scrub_text(v) if isinstance(v, str) else v)
                              for k, v in report.user_properties]
    if isinstance(getattr(report, "wasxfail", None), str):
        report.wasxfail = secrets.scrub_text(report.wasxfail)


def scrub_junit(config: pytest.Config) -> None:
    """junit.xml is written by pytest at the end of the session: scrubbed once more after it is
    written, for what reached it past the reports (a plugin's property, a collection error)."""
    xmlpath = getattr(config.option, "xmlpath", None)
    if not _is_controller(config) or not xmlpath or not Path(xmlpath).is_file():  # the controller writes it
        return
    path = Path(xmlpath)
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    scrubbed = secrets.scrub_text(text)
    if scrubbed != text:
        path.write_text(scrubbed, encoding="utf-8", errors="surrogateescape")


def apply_baseline(item, call, report, session: SuiteSession) -> None:
    baseline = getattr(session, "baseline", None)
    if baseline is None:
        return
    known = baseline.for_test(test_key(item))
    if report.failed:
        exc = call.excinfo.value if call.excinfo is not None else None
        if not isinstance(exc, ConformanceFailure):
            return
        failing = {v.check_id for v in exc.violations if v.is_error}
        new, fixed = compare_with_baseline(known, failing)
        if not new and not fixed:
            report.outcome = "skipped"
            report.wasxfail = "known failure (baseline): " + "; ".join(
                f"{c}: {known[c]}" for c in sorted(failing))
            return
        text = []
        if new:
            text.append(f"new failure(s) not in the baseline {baseline.path}: {', '.join(sorted(new))}")
        if fixed:
            text.append(f"known failure(s) that no longer happen: {', '.join(sorted(fixed))} — update the baseline")
        report.sections.append(("conformance baseline", "\n".join(text)))
    elif report.passed and known:
        report.outcome = "failed"
        report.longrepr = (
            f"baseline {baseline.path} lists known failure(s) for {test_key(item)} "
            f"({', '.join(sorted(known))}) but the test passed: the stack changed; update the baseline "
            f"(--conformance-baseline-write FILE) and keep the reasons")


def run_facts(session: SuiteSession) -> dict[str, str]:
    """What was tested, once for every report (JUnit testsuite properties, summary.md)."""
    cfg = session.config
    return {
        "target": cfg.target or "",
        "api": cfg.api,
        "model": cfg.model or "(captured)",
        "engine": session.versions.get("engine", ""),
        "router": session.versions.get("router", ""),
        "suite": session.versions.get("suite", ""),
    }


def not_run(pytest_session: pytest.Session, session: SuiteSession) -> dict[str, str]:
    """The corpora of a wire the target does not serve, skipped under --conformance-api auto:
    '<client> corpus' -> 'not run: why' for the summary (a skip must not read as a pass)."""
    cfg = session.config
    if cfg.api != "auto" or session.target_down() is not None:
        return {}
    try:
        caps, _ = all_cases(pytest_session.config)
    except pytest.UsageError:
        return {}
    out: dict[str, str] = {}
    for capture in caps:
        wire = capture_wire(capture)
        key = f"{capture.client} corpus"
        if key in out or cfg.client == capture.client or wire is None:
            continue
        if not session.serves(wire):
            out[key] = "not run: " + not_served_reason(session, wire)
    return out


# ----------------------------------------------------------------------------- end of session
def finish(pytest_session: pytest.Session, session: SuiteSession) -> None:
    config = pytest_session.config
    progress.set_sink(None)  # the capture manager of this session ends with it
    if not _is_controller(config):
        return
    cfg = session.config
    meta = {**run_facts(session), "salt": "on" if cfg.salt else "off", **not_run(pytest_session, session)}
    session.summary_path = write_summary(session.report_dir, meta)
    session.causes = from_results(read_results(session.results_dir)) if session.results_dir.is_dir() else []
    # report.html and the run's settings (what `conformance report compare` reads), once, here
    if session.results_dir.is_dir():  # a run that recorded nothing (collect-only, no test) gets no report
        write_run_settings(session.results_dir, {**meta, "markers": config.getoption("markexpr", "") or ""},
                           {"salt": cfg.salt, "deadline_connect": cfg.deadline_connect,
                            "deadline_first_content": cfg.deadline_first_content,
                            "deadline_total": cfg.deadline_total, "model_map": dict(cfg.model_map),
                            "model": cfg.model or "", "api": cfg.api})
        session.html_path = write_html(session.report_dir, meta, baseline=getattr(session, "baseline", None))
    if cfg.baseline_write is not None:
        failures: dict[str, set[str]] = {}
        messages: dict[str, str] = {}
        results_dir = session.results_dir
        for r in read_results(results_dir) if results_dir.is_dir() else []:
            # the checks that carry violations, as a failing test's ConformanceFailure does (a
            # summary id such as suite.stream.wellformed is recorded failed with no violation)
            if r.outcome in ("failed", "error") and r.violations:
                failures.setdefault(r.test_id, set()).add(r.check_id)
                messages.setdefault(r.test_id, r.message[:120])
        session.baseline_written = write_baseline(cfg.baseline_write, failures, target=cfg.target or "", messages=messages)


def terminal_causes(tr, session: SuiteSession) -> None:
    """The run's root causes, at most ten lines, before pytest's failure sections."""
    if not _is_controller(tr.config):
        return
    cause = getattr(session, "preflight_cause", None)
    causes = [cause] if cause is not None else getattr(session, "causes", [])
    if not causes:
        return
    tr.write_sep("=", f"conformance: {len(causes)} root cause(s), the most tests first")
    for line in headline_lines(causes):
        tr.write_line(secrets.scrub_text(line), red=True)
    _point_failures_at_their_cause(tr, causes)


def _point_failures_at_their_cause(tr, causes: list) -> None:
    """A failure a cause of the setup explains (a key, a model name, a path: the same answer on
    every failing request) is printed as one line naming that cause, not as its own block."""
    cause_of: dict[str, int] = {}
    for n, cause in enumerate(causes[:MAX_SHOWN], 1):
        if cause.kind in SETUP_KINDS:
            for test in cause.tests:
                cause_of.setdefault(test, n)
    if not cause_of:
        return
    for report in tr.stats.get("failed", []):
        path, _, name = report.nodeid.partition("::")
        n = cause_of.get(f"{Path(path).name}::{name}")
        if n is not None and report.when == "call":
            report.longrepr = secrets.scrub_text(f"root cause {n} (above): {causes[n - 1].what}")


def terminal_summary(tr, session: SuiteSession) -> None:
    if not _is_controller(tr.config):
        return
    tr.write_sep("-", "conformance")
    cfg = session.config
    tr.write_line(secrets.scrub_text(f"target {cfg.target}  api {cfg.api}  run token {cfg.run_token}"
                  + ("  (salted)" if cfg.salt else "")))
    versions = ", ".join(f"{k} {v}" for k, v in sorted(session.versions.items()))
    if versions:
        tr.write_line(f"versions: {versions}")
    path = getattr(session, "summary_path", None)
    if path:
        tr.write_line(f"summary: {path}")
    html_path = getattr(session, "html_path", None)
    if html_path:
        tr.write_line(f"report: {html_path}")
    failures = session.report_dir / "failures"
    if failures.is_dir() and any(failures.iterdir()):
        tr.write_line(f"failure folders (request, raw response, curl, replay command): {failures}/")
    written = getattr(session, "baseline_written", None)
    if written:
        tr.write_line(f"baseline written: {written}")
    if session.target_down() and getattr(session, "preflight_cause", None) is None:
        tr.write_line(secrets.scrub_text(f"the target went down: {session.target_down()}"), red=True)
