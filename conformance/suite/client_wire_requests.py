"""The requests test_client_wire.py sends: found in real captures by the shape they carry, and
derived from them only through the writers of their wire's Dialect.

Rules:
- A source is a main generation request (never count_tokens or a probe) that was answered at
  capture time (`requests`).
- The pool is the run's corpus, then the bundled captured/ (captures not already in it), each
  newest release first (`conformance.capture.corpus.newest_first`, the one version key); a test
  takes the first captured model request whose body has its shape (`find`), so a corpus of
  another release still gets these tests.
- `isolated(ctx, exchange, wire, *keep)` is the captured request as the suite sends it
  (`conformance.suite.cases.prepared`: the served model, the run salt) without the new shapes
  another test owns (`keep` names the test's own: "display" for `thinking.display`,
  "system_entries" for mid-conversation system entries, "max_tokens" for an output cap over
  ISOLATED_MAX_TOKENS), so a stack that refuses one shape fails that shape's id alone. The
  output cap goes through `with_output_cap`, which keeps a thinking budget below it (a budget
  at or above max_tokens is a request a conformant engine rightly refuses).
- Every derived request passes its wire's request rules before it is sent
  (`conformance.wire.request_rules.request_problems`, `send`): one that does not is the suite's
  own bug, raised as `cases.DerivedRequestInvalid`, never sent nor blamed on the target.
- A forced tool choice goes with thinking off (`forcing`, then `without_thinking`: the Messages
  API refuses both at once), sent whole (`with_stream(False)`).
- The shapes are read by the Dialect (`thinking_display`, `system_role_turns`, `deferred_tools`,
  `last_tool_result`, `tool_definitions` / `tool_name`, `system_block_text`); a wire that has no
  such shape reads as none, so its captures are never picked for that test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.capture.corpus import load_captures, newest_first
from conformance.capture.format import Capture, Exchange
from conformance.core.paths import captured_dir
from conformance.core.versions import version_key
from conformance.layers.hop import accumulate, find_forwarded, received_log, replay
from conformance.suite import cases
from conformance.suite.cases import prepared, require_wire, valid_derived
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect_for_path

_POOL = pytest.StashKey[list]()
# 1x1 transparent PNG: the smallest image a tool (a screenshot, Read of a .png) can return.
PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
PARALLEL_PROMPT = ("Read the files left.txt and right.txt (both at once), then write a file named both.txt "
                   "with the content of left.txt on the first line and the content of right.txt on the "
                   "second line. [task:parallel-reads]")
# Claude Code's first system block: `x-anthropic-billing-header: cc_version=<version>.<suffix>`,
# its suffix different per conversation.
BILLING = "x-anthropic-billing-header:"
READ_TOOLS = ("read", "read_file", "view")
ISOLATED_MAX_TOKENS = 4096  # fits beside any captured prompt in a 32k context
# What a conversation that used the API's server tools replays before the client's own tool call:
# an encrypted thinking block, a server tool call and its result.
HISTORY_BLOCKS = [
    {"type": "redacted_thinking", "data": "RXF1aXZhbGVudCBvZiBhbiBlbmNyeXB0ZWQgdGhpbmtpbmcgYmxvY2s="},
    {"type": "server_tool_use", "id": "srvtoolu_01conformance0000000001", "name": "web_search",
     "input": {"query": "tidy code"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01conformance0000000001",
     "content": [{"type": "web_search_result", "url": "https://example.com/", "title": "Example",
                  "encrypted_content": "ZXhhbXBsZQ==", "page_age": None}]},
]


def wire_of(exchange: Exchange) -> Dialect:
    """The wire of a captured model request (main exchanges always have one)."""
    return dialect_for_path(exchange.request.path)


# ---- the pool and the search ----------------------------------------------------------------
def pool(config) -> list[Capture]:
    """The run's corpus, then the bundled one, newest release of each client first."""
    found = config.stash.get(_POOL, None)
    if found is None:
        caps, _ = cases.all_cases(config)
        seen = {c.id for c in caps}
        bundled = [c for c in load_captures(captured_dir()) if c.id not in seen and c.main_exchanges()]
        found = newest_first(caps) + newest_first(bundled)
        config.stash[_POOL] = found
    return found


def requests(config):
    """(capture, exchange, wire) of every captured main generation request (never count_tokens
    or a probe, `Exchange.is_generation`) that was not refused at capture time, pool order."""
    for cap in pool(config):
        for ex in cap.generation_exchanges():
            if not ex.refused_at_capture:
                yield cap, ex, wire_of(ex)


def find(ctx, what: str, pred: Callable[[Dialect, dict], bool],
         prefer: Callable[[Capture, Exchange], object] | None = None) -> tuple[Capture, Exchange, Dialect]:
    """The first captured request (pool order) whose body satisfies `pred(wire, body)`; with
    `prefer`, the one of the newest release that `prefer(capture, exchange)` ranks highest. The
    test then runs as that capture's, on its wire (skipped when the target does not serve it)."""
    found = [(cap, ex, wire) for cap, ex, wire in requests(ctx.item.config) if pred(wire, ex.request.body)]
    if not found:
        cases.fail_no_captures(ctx, cases.NoCaptures(f"no captured request carries {what}"))
    cap, ex, wire = found[0]
    if prefer is not None:
        cap, ex, wire = max(found, key=lambda f: (version_key(f[0].client_version), prefer(f[0], f[1])))
    start(ctx, cap, wire)
    return cap, ex, wire


def start(ctx, capture: Capture, wire: Dialect) -> None:
    """The test runs as `capture`'s, on `wire`."""
    ctx.for_capture(capture)
    ctx.api = wire.name
    require_wire(ctx, wire)


# ---- the shapes -----------------------------------------------------------------------------
def tool_names(wire: Dialect, body: dict) -> list[str]:
    return [name for t in wire.tool_definitions(body) if (name := wire.tool_name(t)) is not None]


def has_display(wire: Dialect, body: dict) -> bool:
    return wire.thinking_display(body) is not None


def has_empty_system_entry(wire: Dialect, body: dict) -> bool:
    return any(not t.texts for t in wire.system_role_turns(body))


def has_system_entry_text(wire: Dialect, body: dict) -> bool:
    return any(t.texts for t in wire.system_role_turns(body))


def has_tool_result(wire: Dialect, body: dict) -> bool:
    return wire.last_tool_result(body) is not None


def has_deferred_tool(wire: Dialect, body: dict) -> bool:
    return bool(wire.deferred_tools(body))


def has_read_tool(wire: Dialect, body: dict) -> bool:
    return wire.prompt(body) is not None and any(n.lower() in READ_TOOLS for n in tool_names(wire, body))


def has_large_output_cap(wire: Dialect, body: dict) -> bool:
    return (wire.output_cap(body) or 0) >= 100000


def has_billing_and_tool_result(wire: Dialect, body: dict) -> bool:
    return wire.system_block_text(body, BILLING) is not None and has_tool_result(wire, body)


# ---- the requests ---------------------------------------------------------------------------
def isolated(ctx, exchange: Exchange, wire: Dialect, *keep: str) -> dict:
    """The captured request as sent, without the shapes other tests own (see module rules)."""
    body = prepared(ctx, exchange).body
    if "display" not in keep:
        body = wire.without_thinking_display(body)
    if "system_entries" not in keep:
        body = wire.without_system_entries(body)
    cap = wire.output_cap(body)
    if "max_tokens" not in keep and cap is not None and cap > ISOLATED_MAX_TOKENS:
        body = wire.with_output_cap(body, ISOLATED_MAX_TOKENS)
    return body


def client_tools(wire: Dialect, body: dict) -> list[str]:
    """The offered tools a client runs (a schema, or a freeform grammar): the ones a forced tool
    choice may demand; a hosted (server) tool is run by the API itself."""
    return [t.name for t in wire.offered_tool_specs(body) if t.kind != "hosted"]


def forced(wire: Dialect, body: dict, name: str | None = None) -> dict:
    """`body` demanding a call (of `name`, else of any offered tool), thinking off, sent whole."""
    return wire.with_stream(wire.without_thinking(wire.forcing(body, name)), False)


def send(ctx, exchange: Exchange, wire: Dialect, body: dict, note: str):
    """Send a derived request, once it passes its wire's request rules (never a target's fault)."""
    req = exchange.request
    valid_derived(wire, body, req, note)
    return ctx.send(wire, req.path, body, captured_headers=req.headers, query=req.query, note=note)


def decide(ctx, verdict, sent=None, judge: bool = True):
    """Record a check's verdict; an accepted answer is then judged as every exchange is."""
    ctx.outcome(verdict.check_id, verdict.outcome, violations=verdict.violations, message=verdict.note)
    if judge and sent is not None and sent.raw.ok:
        return judge_sent(ctx, sent)
    return None


def judge_sent(ctx, sent):
    return ctx.judge(sent, expect_model=ctx.settings.served_model(sent.request.get("model")))


def calls(wire: Dialect, verdict) -> list:
    return wire.tool_calls(verdict.message) if verdict is not None and verdict.message else []


def engine_emitted_calls(ctx, wire: Dialect, body: dict, since: int | None) -> int | None:
    """With `--conformance-engine-url`: how many tool calls the engine emits for the request it
    received for `body` (found in its received log, replayed to it directly on its own wire);
    None without an engine URL, a log, the forwarded request or a usable answer. An engine
    that answers one body alike (the reference engine; a real one at temperature 0) makes this
    the evidence of what a router dropped on the way back."""
    url = ctx.settings.engine_url
    log = received_log(url) if url else None
    forwarded = find_forwarded(log["requests"], body, since, wire=wire) if log else None
    engine_wire = dialect_for_path(str(forwarded.get("path", ""))) if forwarded else None
    if forwarded is None or engine_wire is None:
        return None
    message = accumulate(replay(url, forwarded["path"], forwarded["body"], wire=engine_wire), forwarded["body"],
                         engine_wire)
    return None if message is None else len(engine_wire.tool_calls(message))


# ---- the sources of the parametrized and paired tests ---------------------------------------
def schema_sources(config) -> list[tuple[str, Capture, Exchange]]:
    """Per client, the captured request of its newest release that offers the most tools."""
    best: dict[str, tuple[tuple, int, Capture, Exchange]] = {}
    for cap, ex, wire in requests(config):
        n = len(tool_names(wire, ex.request.body))
        key = (version_key(cap.client_version), n)
        if n and (cap.client not in best or key > best[cap.client][:2]):
            best[cap.client] = (*key, cap, ex)
    return [(client, cap, ex) for client, (_, _, cap, ex) in sorted(best.items())]


def conversation_pair(config) -> list[tuple[Capture, Exchange]] | None:
    """Two first requests of one client release with the same tools and different billing headers
    (the newest release that has such a pair). Their system text differs only where the captures'
    project folders do; the test gives the second the first's, as two conversations in one project."""
    groups: dict[tuple, list[tuple[Capture, Exchange]]] = {}
    for cap in pool(config):
        mains = cap.main_exchanges()
        body = mains[0].request.body if mains else None
        if not isinstance(body, dict):
            continue
        wire = wire_of(mains[0])
        billing = wire.system_block_text(body, BILLING)
        if billing is None:
            continue
        group = groups.setdefault((cap.client, cap.client_version, tuple(tool_names(wire, body))), [])
        if all(wire.system_block_text(ex.request.body, BILLING) != billing for _, ex in group):
            group.append((cap, mains[0]))
            if len(group) == 2:
                return group
    return None
