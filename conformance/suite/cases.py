"""Which captures the suite replays, and how one captured exchange is replayed.

Rules:
- The corpus is `--conformance-captures` (a folder or one file), else the bundled captured/
  (`conformance.core.paths.captured_dir()`); `--conformance-client` filters by client. Loaded once per
  process (collection), by the one corpus scan (`conformance.capture.corpus`), and kept in the
  config stash. Releases are ordered by the one version key (`conformance.core.versions`).
- Releases: the run replays the current release of each client (the corpus manifest's `current`,
  else the newest release found); `--conformance-client-version V[,V...]` replays release V of
  each client that has it (the others stay current), `all` every release.
- Test keys name the client and the case, not the release (`claude-code/default`): a baseline or
  a peer fixture keeps matching when the current release changes; the release is a property of
  every result (`client_version`). Only a run that replays two releases of one client puts the
  release in that client's keys (`claude-code/2.1.197/default`), so no two tests share a key.
  An unknown client's captures, and captures that would share a key, add `@<file>-<hash>` (the
  file name and 8 hex of its SHA-256): stable whatever else the corpus holds, never a number.
- A corpus that yields no capture is not a vacuous pass: the tests are parametrized with a
  single `no-captures` case that fails with `suite.corpus.present`.
- Replay is the one replay-one-capture (`conformance.suite.replay`): byte-exact by default, the
  captured body bytes sent unless the suite had to change the body (the model rewritten to what
  the target serves, the run salt); `prepared(ctx, exchange)` is one exchange so prepared, the
  start of every request a test derives from a capture.
- A request derived from a capture passes its wire's request rules before it is sent
  (`valid_derived`): one that does not is the suite's own bug (`DerivedRequestInvalid`).
- A capture's wire is a Dialect (`capture_wire`); a test needs its wire served (`require_wire`).
- Exchanges of one test share memoised results through `session.cache` (the replay of a
  capture is judged by several tests: incremental delivery, variants, stop sequences).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.capture.corpus import load_captures
from conformance.capture.format import Capture, CapturedRequest, CaptureFormatError, Exchange
from conformance.checks import suite as suite_checks
from conformance.clients.profile import known
from conformance.core.paths import captured_dir
from conformance.core.versions import version_key
from conformance.suite import replay as one_replay
from conformance.suite.replay import Step
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS, dialect_for_path
from conformance.wire.request_rules import betas_of, request_problems

_CASES = pytest.StashKey[tuple]()


@dataclass(frozen=True)
class NoCaptures:
    reason: str
    id: str = "no-captures"


def _corpus(config) -> Path:
    opt = config.getoption("conformance_captures", None)
    return Path(opt) if opt else captured_dir()


def all_cases(config) -> tuple[list[Capture], str]:
    """(captures, why-empty) for this run, loaded once."""
    cached = config.stash.get(_CASES, None)
    if cached is not None:
        return cached
    root = _corpus(config)
    client = config.getoption("conformance_client", None) or "all"
    why = ""
    try:
        caps = load_captures(root) if root.exists() else []
        if not root.exists():
            why = f"captures path {root} does not exist"
    except CaptureFormatError as exc:
        raise pytest.UsageError(f"conformance: {exc}") from None
    caps = [c for c in caps if c.main_exchanges()]
    if client != "all":
        caps = [c for c in caps if c.client == client]
    caps = select_releases(caps, release_option(config), current_releases(root, caps))
    caps.sort(key=lambda c: c.id)
    if not caps and not why:
        why = f"no capture with a model request under {root}" + (f" for client {client}" if client != "all" else "")
    config.stash[_CASES] = (caps, why)
    return caps, why


def release_option(config) -> str:
    return (config.getoption("conformance_client_version", None) or os.environ.get("CONFORMANCE_CLIENT_VERSION")
            or "current")


def current_releases(root: Path, caps: list[Capture]) -> dict[str, str]:
    """client -> its current release: the manifest's `current`, else the newest in the corpus."""
    newest: dict[str, str] = {}
    for c in caps:
        if c.client not in newest or version_key(c.client_version) > version_key(newest[c.client]):
            newest[c.client] = c.client_version
    manifest = root / "manifest.json" if root.is_dir() else None
    if manifest is not None and manifest.is_file():
        try:
            marked = json.loads(manifest.read_text(encoding="utf-8")).get("current") or {}
        except ValueError:
            marked = {}
        newest.update({k: v for k, v in marked.items() if isinstance(v, str) and any(
            c.client == k and c.client_version == v for c in caps)})
    return newest


def select_releases(caps: list[Capture], spec: str, current: dict[str, str]) -> list[Capture]:
    """The captures of the releases `spec` asks for ("current", "all", or versions, comma-separated)."""
    if spec == "all":
        return caps
    asked = {v.strip() for v in spec.split(",") if v.strip() and v.strip() != "current"}
    have = {(c.client, c.client_version) for c in caps}
    unknown = sorted(v for v in asked if not any(cv == v for _, cv in have))
    if unknown:
        releases = ", ".join(sorted(f"{cl} {v}" for cl, v in have))
        raise pytest.UsageError(f"conformance: --conformance-client-version {', '.join(unknown)}: no capture of that "
                                f"release in the corpus (releases: {releases}); pass one of them, current or all")
    wanted = {}
    for client, version in current.items():
        picked = [v for v in asked if (client, v) in have]
        wanted[client] = set(picked) if picked else {version}
    return [c for c in caps if c.client_version in wanted.get(c.client, set())]


def capture_key(capture: Capture, caps: list[Capture]) -> str:
    """The test key part of a capture: client/case, with the release only when this run replays
    several releases of that client. A capture of an unknown client, or one whose key another
    capture of the run shares, also carries its file name and a hash of its content, so its id
    never depends on which other captures the run holds (pytest would number repeated ids)."""
    releases = {c.client_version for c in caps if c.client == capture.client}
    key = capture.id if len(releases) > 1 else f"{capture.client}/{capture.case}"
    shared = sum(1 for c in caps if c.client == capture.client and c.case == capture.case
                 and (len(releases) == 1 or c.client_version == capture.client_version)) > 1
    if shared or not known(capture.client):
        key += f"@{content_tag(capture)}"
    return key


def content_tag(capture: Capture) -> str:
    """`<file name>-<8 hex of its content's SHA-256>` (the requests' bytes when it has no file)."""
    try:
        data = capture.path.read_bytes() if capture.path is not None else None
    except OSError:
        data = None
    if data is None:
        data = b"".join(ex.request.body_bytes() for ex in capture.exchanges)
    stem = capture.path.stem if capture.path is not None else capture.case
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}"


class DerivedRequestInvalid(AssertionError):
    """A request the suite derived breaks its wire's request rules: the suite's own bug."""


def valid_derived(wire: Dialect, body: Any, request: CapturedRequest, note: str) -> None:
    """Raise DerivedRequestInvalid when `body`, derived from the captured `request`, breaks its
    wire's request rules (`conformance.wire.request_rules`): never sent, never the target's fault."""
    problems = request_problems(wire, body, betas=betas_of(request.headers), path=request.path)
    if problems:
        raise DerivedRequestInvalid(f"suite bug: the request derived from a captured {request.path} ({note}) "
                                    f"breaks the {wire.name} wire's request rules: {'; '.join(problems)}")


def capture_wire(capture: Capture) -> Dialect | None:
    """The wire of a capture's model requests (its first one's path); None without one."""
    mains = capture.main_exchanges()
    return dialect_for_path(mains[0].request.path) if mains else None


def parametrize(metafunc, select=lambda c: True) -> None:
    caps, why = all_cases(metafunc.config)
    chosen = [c for c in caps if select(c)]
    if not caps:
        metafunc.parametrize("capture", [NoCaptures(why)], ids=["no-captures"])
        return
    metafunc.parametrize("capture", chosen, ids=[capture_key(c, caps) for c in chosen])


def fail_no_captures(ctx, capture: NoCaptures) -> None:
    ctx.check(suite_checks.CORPUS_PRESENT, False, capture.reason, expected="at least one capture", seen="none")
    ctx.finish("no captures to replay")


def client_selected(ctx, capture=None) -> bool:
    """The user named this capture's client (--conformance-client): its wire is then required, a
    target that does not serve it fails (e.g. `suite.responses.available`) instead of skipping."""
    client = ctx.session.config.client
    return client != "all" and (capture.client if capture is not None else ctx.client) == client


def require_wire(ctx, wire: Dialect, capture=None) -> None:
    """Fail fast when the target is down; skip (with the reason) when it does not serve this wire
    and the user did not select it (by --conformance-api or by naming the client)."""
    if ctx.session.target_down() is not None:
        ctx.fail_target_down()
    if client_selected(ctx, capture):
        return
    if not ctx.session.serves(wire):
        others = [d for d in DIALECTS.values() if d is not wire]
        if ctx.session.forced_wire is None and not any(ctx.session.serves(other) for other in others):
            # Serving no API is no reason to skip everything (a vacuous pass): it is a failure.
            paths = " nor ".join(f"POST {d.generation_path}" for d in DIALECTS.values())
            ctx.check(suite_checks.REQUEST_ACCEPTED, False, f"the target serves neither {paths}",
                      expected="one of the model APIs", seen="404/405/501 on each (probed with an empty body)")
            ctx.finish("the target serves no model API at this URL")
        pytest.skip(not_served_reason(ctx.session, wire))


def not_served_reason(session, wire: Dialect) -> str:
    """Why the captures of a wire the target does not serve were not run, and how to run them."""
    return (f"the target does not serve POST {wire.generation_path} (404/405/501 to an empty-body probe; "
            f"--conformance-api {session.config.api}): the {wire.name} captures were not run; pass --conformance-api "
            f"{wire.name} (or name the client with --conformance-client) to fail on it instead")


def _preparation(ctx) -> dict:
    """How a test prepares captured requests: the model the target serves, the run salt when the
    run salts."""
    return {"model": lambda captured: ctx.session.model_for(captured, ctx.settings),
            "salt": ctx.settings.run_token if ctx.settings.salt else None}


def prepared(ctx, exchange: Exchange, turn: int = 1) -> Step:
    """A captured exchange as this test sends it (`conformance.suite.replay.prepare`)."""
    return one_replay.prepare(exchange, turn, **_preparation(ctx))


def send_step(ctx, step: Step, *, note: str = ""):
    """Send a prepared step as it is, bytes and all, through the test's context."""
    req = step.exchange.request
    return ctx.send(step.wire, req.path, step.body or {}, captured_headers=req.headers, query=req.query,
                    note=note or step.exchange.note or f"exchange {step.turn}", body=step.data)


def replay(ctx, capture: Capture, *, judge: bool = True):
    """Replay every model request of a capture in order (the one replay-one-capture);
    [(Sent, verdict)], memoised per process."""
    key = ("replay", capture.id, ctx.settings.salt, ctx.settings.model)
    cached = ctx.session.cache.get(key)
    if cached is not None and not judge:
        ctx.exchanges.extend(s for s, _ in cached)
        return cached

    def judged(step: Step, sent):
        expect = ctx.settings.served_model(step.request.get("model"))
        if judge:
            return ctx.judge(sent, expect_model=expect, turn=step.turn)
        return one_replay.check(step, sent.raw, expect_model=expect, turn=step.turn)

    out = [(sent, verdict) for _, sent, verdict in one_replay.replay(
        capture, lambda step: send_step(ctx, step), judged, **_preparation(ctx))]
    ctx.session.cache[key] = out
    return out
