"""pytest11 entry point of conformance (the option group, markers, fixtures and hooks).

Rules: inert unless `--target` (or CONFORMANCE_TARGET) is given; hooks are a few lines that
delegate to the session object in `conformance.suite`; state lives in `config.stash`. Options
other than --target start with --conformance- (docs/contracts/options.md).

- Every pytest run in an environment with conformance installed loads this entry point, so it
  imports only pytest at module level: the suite (`conformance.suite.hooks` and what it loads,
  the judge and the reports) is imported inside the hooks, when pytest configures a run.

- With a target and no test paths on the command line, the bundled suite (`conformance/suite/`)
  is what gets collected, from any directory.
- Markers `loop`, `live`, `load`, `context`, `translation`, `peers`; a run without `-m` leaves out
  `live`, `load` and `context` (opt-in: they need real clients or take long), keeps `loop`.
- Configuration order: marker `conformance(...)` > command line (and CONFORMANCE_* env) >
  fixture `conformance_overrides` > default (conformance.suite.config).
- Under pytest-xdist the controller prepares the report folder, writes testsuite properties,
  the summary and the baseline verdict; workers only run tests and append results.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SUITE_DIR = Path(__file__).resolve().parent / "suite"
OPT_IN_MARKERS = ("live", "load", "context", "perf")
OPT_IN_MARKERS += ("prefix_reuse",)
OPT_IN_MARKERS += ("soak",)
MARKERS = {
    "loop": "agent-loop scenarios driven to completion (part of the default run)",
    "live": "drives the real Claude Code / opencode CLIs (opt-in: -m live)",
    "load": "concurrency and load probes (opt-in: -m load)",
    "context": "context-length probes (opt-in: -m context)",
    "prefix_reuse": "prefix reuse across the real client's wire: turns and conversations (opt-in: -m prefix_reuse)",
    "translation": "router translation diff against the engine (needs --conformance-engine-url)",
    "peers": "runs against real routers and engines (needs .ci/peers set-up)",
    "soak": "N agent sessions sharing a prefix for a fixed duration: load.soak_stable, goodput (opt-in: -m soak)",
    "perf": "phase figures: prefill and decode tokens/s, K repeats each (opt-in: -m perf)",
    "conformance(**settings)": "per-test conformance settings (highest in the configuration order)",
}

_SESSION = pytest.StashKey[object]()
# The --conformance-api choices, kept equal to conformance.suite.config's APIS (the registered
# wires) by a test: loading the plugin must not load the suite for every pytest run. The client
# names are not repeated here: the suite's config checks --conformance-client against the
# registered profiles when it resolves a run, so a new client is one profile and nothing else.
APIS = ("auto", "anthropic", "openai", "responses")


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "conformance: agent-loop conformance of an LLM serving stack")
    g.addoption("--target", dest="conformance_target", metavar="URL",
                help="base URL of the router or engine under test (env CONFORMANCE_TARGET); "
                     "enables the suite")
    g.addoption("--conformance-api", choices=APIS, default=None,
                help="which API to test: anthropic, openai, responses (the OpenAI Responses API, Codex's), or auto "
                     "(probe what the target serves; default)")
    g.addoption("--conformance-model", metavar="NAME",
                help="model sent in every request (default: the captured model if the target serves it, "
                     "else the first of the target's /v1/models)")
    g.addoption("--conformance-model-map", action="append", metavar="SENT=SERVED",
                help="the model expected to answer when SENT is asked (a router alias); repeatable or comma-separated")
    g.addoption("--conformance-api-key", metavar="KEY",
                help="API key, sent the way each client sends it (env CONFORMANCE_API_KEY)")
    g.addoption("--conformance-client", metavar="all|CLIENT", default=None,
                help="which client's captures to replay (default all); naming one selects its wire: a target "
                     "that does not serve it fails instead of skipping (codex: suite.responses.available)")
    g.addoption("--conformance-client-version", metavar="V[,V...]|all|current", default=None,
                help="which release of each client to replay: current (default: the manifest's current release), "
                     "a version (that client's release; the others stay current) or all (env CONFORMANCE_CLIENT_VERSION)")
    g.addoption("--conformance-captures", metavar="DIR|FILE",
                help="captures folder or one capture file (default: the bundled captured/)")
    g.addoption("--conformance-deadline-total", type=float, metavar="SECONDS",
                help="wall-clock deadline per request, pings or not (default 180)")
    g.addoption("--conformance-deadline-first-content", type=float, metavar="SECONDS",
                help="deadline until the first content arrives (default 60)")
    g.addoption("--conformance-deadline-connect", type=float, metavar="SECONDS",
                help="connect deadline (default 10)")
    g.addoption("--conformance-engine-version", metavar="TEXT", help="engine version for the reports (free text)")
    g.addoption("--conformance-router-version", metavar="TEXT", help="router version for the reports (free text)")
    g.addoption("--conformance-report-dir", metavar="DIR", help="where reports go (default reports/)")
    g.addoption("--conformance-baseline", metavar="FILE",
                help="known failures of this stack; the run fails on any change either way")
    g.addoption("--conformance-baseline-write", metavar="FILE",
                help="write this run's failures as a baseline file (keeps reasons already written)")
    g.addoption("--conformance-salt", action="store_true", default=None,
                help="put a unique run token at the start of the system prompt (defeats prefix and response caches)")
    g.addoption("--conformance-model-header", action="append", metavar="NAME",
                help="response header that names the model or tier that answered (repeatable)")
    # ---- options owned by other areas: one addoption line each, below this line ----
    g.addoption("--conformance-concurrency", type=int, default=None, metavar="N", help="load probes (-m load): requests in flight at once, top of the ramp 1, 2, 4 .. N (default 4)")
    g.addoption("--conformance-repeat", type=int, default=None, metavar="K", help="probes: a check passes only if it passes K times; differing runs are reported as flaky with counts (default 1; refuses --reruns)")
    g.addoption("--conformance-context-limit", type=int, default=None, metavar="TOKENS", help="context probes (-m context): the context limit to test (default: what the target advertises)")
    g.addoption("--conformance-engine-url", metavar="URL", default=None, help="the engine behind the router: failing exchanges are replayed against it to say which layer broke; enables -m translation")
    g.addoption("--conformance-injection-route", action="store_true", default=None, help="translation: the router claims an injection route that strips tools; check that it does (opt-in)")
    g.addoption("--conformance-perf-repeats", type=int, default=None, metavar="K", help="phase figures (-m perf): measurements per point, reported as min/median/max (default 3)")
    g.addoption("--conformance-hang-after", type=int, default=None, metavar="K", help="after K exchanges in a row hit a deadline with no content, send one minimal request; if it hangs too, the remaining exchanges fail at once naming the hang (default 3; 0 turns it off)")
    g.addoption("--conformance-max-response-bytes", type=int, default=None, metavar="N", help="stop reading a response past N bytes: suite.limits.response_size (default 64 MiB)")
    g.addoption("--conformance-max-line-bytes", type=int, default=None, metavar="N", help="stop reading an event stream with a line longer than N bytes: suite.limits.line_size (default 8 MiB)")
    g.addoption("--conformance-max-event-bytes", type=int, default=None, metavar="N", help="stop reading an event stream with an event larger than N bytes: suite.limits.event_size (default 16 MiB)")
    g.addoption("--conformance-metrics-url", metavar="URL|off", default=None, help="prefix-reuse probe (-m prefix_reuse): the Prometheus exposition with vLLM's prefix-cache counters (default: <engine url or target>/metrics; absent is fine; off: not read)")
    g.addoption("--conformance-soak-duration", type=float, default=None, metavar="SECONDS", help="soak (-m soak): how long the sessions run (default 60)")
    g.addoption("--conformance-soak-sessions", type=int, default=None, metavar="N", help="soak (-m soak): concurrent agent sessions sharing a prefix (default 4)")
    g.addoption("--conformance-slo-ttft", type=float, default=None, metavar="SECONDS", help="soak goodput: a request meets the SLO with time to first token at most this (default: not applied)")
    g.addoption("--conformance-slo-itl", type=float, default=None, metavar="SECONDS", help="soak goodput: a request meets the SLO with inter-token latency p95 at most this (default: not applied)")
    # ---- end of options owned by other areas ----


def _hooks():
    """`conformance.suite.hooks`, imported when a run needs the suite (module rules: not with the
    entry point, which every pytest run loads)."""
    # lazily loaded: the suite and the judge only when a target is given, never with the entry point
    from conformance.suite import hooks

    return hooks


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if config.getoption("conformance_target", None) or os.environ.get("CONFORMANCE_TARGET"):
        _hooks().configure(config, _SESSION, SUITE_DIR)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist: share the run token with workers
    if _SESSION in node.config.stash:
        _hooks().configure_node(node, _SESSION)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if _SESSION in session.config.stash:
        _hooks().sessionstart(session, session.config.stash[_SESSION])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _SESSION not in config.stash:
        return
    # The translation diff needs the engine behind the router: without its URL those tests are
    # left out (deselected, not skipped), like the other opt-in areas.
    needs_engine = () if config.getoption("conformance_engine_url", None) else ("translation",)
    _hooks().deselect_opt_in(config, items, SUITE_DIR, OPT_IN_MARKERS + needs_engine)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if call.when == "call" and _SESSION in item.config.stash:
        _hooks().on_call_report(item, call, report, item.config.stash[_SESSION])
    if _SESSION in item.config.stash:
        _hooks().scrub_report(report)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SESSION in session.config.stash:
        _hooks().finish(session, session.config.stash[_SESSION])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION in config.stash:
        _hooks().scrub_junit(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config):
    # outermost: the root causes print before pytest's failure sections, the paths after them
    if _SESSION in config.stash:
        _hooks().terminal_causes(terminalreporter, config.stash[_SESSION])
    result = yield
    if _SESSION in config.stash:
        _hooks().terminal_summary(terminalreporter, config.stash[_SESSION])
    return result


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def conformance_session(request: pytest.FixtureRequest):
    """The SuiteSession: `.config`, `.record(Result)`, `.failure_dir(test_id)`, `.target_down()`."""
    session = request.config.stash.get(_SESSION, None)
    if session is None:
        pytest.fail("the conformance suite needs a target: pass --target=URL (or set CONFORMANCE_TARGET), "
                    "or use `conformance run` to test the embedded reference engine", pytrace=False)
    return session


@pytest.fixture
def conformance_overrides() -> dict:
    """Override in a conftest.py to change settings below the command line (see README)."""
    return {}


@pytest.fixture
def conformance_settings(request: pytest.FixtureRequest, conformance_session, conformance_overrides):
    """The SuiteConfig for this test: marker > command line > conformance_overrides > default."""
    return _hooks().settings_for(request.node, conformance_session, conformance_overrides)


@pytest.fixture
def conformance_ctx(request: pytest.FixtureRequest, conformance_session, conformance_settings):
    """A CheckContext for one test: send, judge, record outcomes, and fail with a failure folder."""
    ctx = _hooks().context_for(request.node, conformance_session, conformance_settings)
    yield ctx
    ctx.flush()
