"""The checks the newest client wire needs (client_wire.*), on requests built from real captures.

Rules:
- Every request starts from a captured request of a real client (the run's corpus first, then
  the bundled captured/, newest release first), found by the shape it carries (a
  `defer_loading` tool, `thinking.display`, an empty `{"role":"system"}` entry, a tool result):
  a corpus of another release still gets these tests. A derived request changes only what its
  test says, through `prepared_body` (the served model, salt) first.
- A refusal of a shape the client sends fails that shape's own id and nothing else; an accepted
  answer is then judged as every exchange is.
- A forced tool choice goes with thinking off (the Messages API refuses both at once), as the
  loop driver forces (the Dialect's `forcing`).
- `prefix_reuse` tests are opt-in (-m prefix_reuse): they send the pair of requests salted with
  this run's token so no earlier test warmed the cache, and read the first signal that can tell
  (conformance.checks.client_wire: the answer's usage or timings, the Prometheus counters at
  `--conformance-metrics-url`, then a salted TTFT ratio, which costs 2 x TTFT_TRIES short streamed
  requests more).
"""

from __future__ import annotations

import copy
import re

import pytest

from conformance.capture.corpus import load_captures
from conformance.capture.format import Capture, Exchange
from conformance.checks import client_wire as rules
from conformance.layers.hop import find_forwarded, log_total, received_log
from conformance.suite import cases
from conformance.suite.cases import prepared_body, require_api
from conformance.wire.dialect import dialect

_POOL = pytest.StashKey[list]()
# 1x1 transparent PNG: the smallest image a tool (a screenshot, Read of a .png) can return.
PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
PARALLEL_PROMPT = ("Read the files left.txt and right.txt (both at once), then write a file named both.txt "
                   "with the content of left.txt on the first line and the content of right.txt on the "
                   "second line. [task:parallel-reads]")
BILLING = "x-anthropic-billing-header:"


def _version_key(cap: Capture) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", cap.client_version or "0"))


def _pool(config) -> list[Capture]:
    """The run's corpus, then the bundled one, newest release of each client first."""
    pool = config.stash.get(_POOL, None)
    if pool is None:
        caps, _ = cases.all_cases(config)
        from conformance.core.paths import captured_dir

        seen = {c.id for c in caps}
        bundled = [c for c in load_captures(captured_dir()) if c.id not in seen and c.main_exchanges()]
        pool = sorted(caps, key=_version_key, reverse=True) + sorted(bundled, key=_version_key, reverse=True)
        config.stash[_POOL] = pool
    return pool


def _find(ctx, what: str, pred, prefer=None) -> tuple[Capture, Exchange]:
    """The first captured request (pool order) whose body satisfies `pred`; with `prefer`, the one
    of the newest release that `prefer(capture, exchange)` ranks highest."""
    found = [(cap, ex) for cap in _pool(ctx.item.config) for ex in cap.main_exchanges()
             if isinstance(ex.request.body, dict) and pred(ex.request.body)]
    if not found:
        cases.fail_no_captures(ctx, cases.NoCaptures(f"no captured request carries {what}"))
    cap, ex = found[0]
    if prefer is not None:
        cap, ex = max(found, key=lambda f: (_version_key(f[0]), prefer(*f)))
    ctx.for_capture(cap)
    ctx.api = ex.request.api
    require_api(ctx, ctx.api)
    return cap, ex


# The new shapes each test owns; every other test sends the captured request without them, so a
# stack that refuses one shape fails that shape's id alone.
SHAPES = ("display", "system_entries", "max_tokens")
ISOLATED_MAX_TOKENS = 4096  # fits beside any captured prompt in a 32k context


def _body(ctx, ex: Exchange, *keep: str) -> dict:
    body, _ = prepared_body(ctx, ex)
    body = copy.deepcopy(body)
    if "display" not in keep and isinstance(body.get("thinking"), dict):
        body["thinking"].pop("display", None)
    if "system_entries" not in keep and isinstance(body.get("messages"), list):
        msgs = body["messages"]
        # mid-conversation entries only: a chat wire's leading system message is its system prompt
        body["messages"] = [m for i, m in enumerate(msgs)
                            if not (i > 0 and isinstance(m, dict) and m.get("role") == "system")]
    if "max_tokens" not in keep and isinstance(body.get("max_tokens"), int):
        body["max_tokens"] = min(body["max_tokens"], ISOLATED_MAX_TOKENS)
    return body


def _send(ctx, ex: Exchange, body: dict, note: str):
    return ctx.send(ex.request.api, ex.request.path, body, captured_headers=ex.request.headers,
                    query=ex.request.query, note=note)


def _decide(ctx, outcome, sent=None, judge: bool = True):
    ctx.outcome(outcome.check_id, outcome.outcome, violations=outcome.violations, message=outcome.note)
    if judge and sent is not None and sent.raw.ok:
        return ctx.judge(sent, expect_model=ctx.settings.served_model(sent.request.get("model")))
    return None


def _calls(ctx, verdict) -> list:
    return dialect(ctx.api).tool_calls(verdict.message) if verdict is not None and verdict.message else []


# ---- shapes the client sends, accepted ------------------------------------------------------


def _has_display(body) -> bool:
    return isinstance(body.get("thinking"), dict) and "display" in body["thinking"]


def _empty_system_entry(body) -> bool:
    return any(isinstance(m, dict) and m.get("role") == "system" and m.get("content") == []
               for m in body.get("messages") or [])


def test_thinking_display_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "thinking.display", _has_display)
    body = _body(ctx, ex, "display")
    sent = _send(ctx, ex, body, f"as captured: thinking {body['thinking']}")
    _decide(ctx, rules.accepted(rules.THINKING_DISPLAY_ACCEPTED, sent.raw, f"thinking {body['thinking']}"), sent)
    ctx.finish("thinking.display accepted")


def test_empty_system_entry_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a {role: system} entry with content []", _empty_system_entry)
    body = _body(ctx, ex, "system_entries")
    sent = _send(ctx, ex, body, "as captured: a {role: system, content: []} entry")
    _decide(ctx, rules.accepted(rules.EMPTY_SYSTEM_ENTRY_ACCEPTED, sent.raw, "a {role: system} entry with content []"),
            sent)
    ctx.finish("empty system entry accepted")


def _last_tool_result(body) -> tuple[dict, dict] | None:
    """(the assistant message with the tool_use, the tool_result block answering it) of the last turn."""
    msgs = body.get("messages") or []
    for i in range(len(msgs) - 1, 0, -1):
        m = msgs[i]
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    prev = next((p for p in reversed(msgs[:i]) if p.get("role") == "assistant"), None)
                    if prev is not None and isinstance(prev.get("content"), list):
                        return prev, b
    return None


def test_tool_result_image_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a tool_result block", lambda b: _last_tool_result(b) is not None)
    body = _body(ctx, ex)
    _, result = _last_tool_result(body)
    text = result.get("content")
    parts = text if isinstance(text, list) else [{"type": "text", "text": text if isinstance(text, str) else ""}]
    result["content"] = [*parts, {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                              "data": PNG_1X1}}]
    sent = _send(ctx, ex, body, "the captured tool result with a PNG image block added")
    _decide(ctx, rules.accepted(rules.TOOL_RESULT_IMAGE, sent.raw, "an image inside a tool_result"), sent)
    ctx.finish("image inside a tool_result accepted")


def test_history_blocks_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a tool_result block", lambda b: _last_tool_result(b) is not None)
    body = _body(ctx, ex)
    assistant, _ = _last_tool_result(body)
    # What a conversation that used the API's server tools replays: an encrypted thinking block, a
    # server tool call and its result, before the client's own tool call.
    assistant["content"][:0] = [
        {"type": "redacted_thinking", "data": "RXF1aXZhbGVudCBvZiBhbiBlbmNyeXB0ZWQgdGhpbmtpbmcgYmxvY2s="},
        {"type": "server_tool_use", "id": "srvtoolu_01conformance0000000001", "name": "web_search",
         "input": {"query": "tidy code"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01conformance0000000001",
         "content": [{"type": "web_search_result", "url": "https://example.com/", "title": "Example",
                      "encrypted_content": "ZXhhbXBsZQ==", "page_age": None}]},
    ]
    sent = _send(ctx, ex, body, "the captured tool loop with redacted_thinking, server_tool_use and "
                                "web_search_tool_result replayed in history")
    _decide(ctx, rules.accepted(rules.HISTORY_BLOCKS, sent.raw, "redacted_thinking / server tool blocks in history"),
            sent)
    ctx.finish("history blocks accepted")


# ---- deferred tools -------------------------------------------------------------------------


def _deferred_names(body) -> set[str]:
    return {t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and t.get("defer_loading") is True}


def _without_thinking(body: dict) -> None:
    body.pop("thinking", None)
    body.pop("context_management", None)
    body["stream"] = False


def test_deferred_tool_not_callable(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a defer_loading tool", lambda b: bool(_deferred_names(b)))
    body = _body(ctx, ex)
    deferred = _deferred_names(body)
    # The deferred tools first, then the tools loaded from the start: a model forced to call "any
    # tool" may pick only a loaded one. (Tools whose schema a decoder may not compile stay out.)
    loaded = [t for t in body["tools"] if t.get("name") not in deferred and "input_schema" in t][:1]
    body["tools"] = [t for t in body["tools"] if t.get("name") in deferred] + loaded
    body = dialect(ctx.api).forcing(body)
    _without_thinking(body)
    since = log_total(ctx.settings.engine_url) if ctx.settings.engine_url else None
    sent = _send(ctx, ex, body, f"forced to call any tool; deferred: {', '.join(sorted(deferred))}")
    if ctx.settings.engine_url:
        # Through a router: what the engine was offered tells it, whatever the model then called.
        log = received_log(ctx.settings.engine_url)
        forwarded = find_forwarded(log["requests"], body, since) if log else None
        leaked = rules.forwarded_deferred((forwarded or {}).get("body"), deferred)
        if leaked is not None:
            _decide(ctx, leaked, judge=False)
    if not sent.raw.ok:
        _decide(ctx, rules.accepted(rules.DEFERRED_NOT_CALLABLE, sent.raw, "defer_loading tools"))
    else:
        verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model")))
        _decide(ctx, rules.deferred_not_called(_calls(ctx, verdict), deferred), judge=False)
    ctx.finish("deferred tools are not callable")


def test_tool_reference_expanded(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a defer_loading tool and a tool result",
                  lambda b: bool(_deferred_names(b)) and _last_tool_result(b) is not None)
    body = _body(ctx, ex)
    tool = sorted(_deferred_names(body))[0]
    assistant, result = _last_tool_result(body)
    search = next((t["name"] for t in body["tools"] if "search" in t.get("name", "").lower()), None)
    call = next(b for b in assistant["content"] if b.get("type") == "tool_use" and b.get("id") == result["tool_use_id"])
    # The client's tool search answered: the call becomes a search, its result the tool's reference.
    assistant["content"] = [call]
    if search:
        call["name"], call["input"] = search, {"query": f"select:{tool}"}
    result["content"] = [{"type": "tool_reference", "tool_name": tool}]
    body["tool_choice"] = {"type": "tool", "name": tool}
    _without_thinking(body)
    sent = _send(ctx, ex, body, f"a tool_result holding a tool_reference to {tool}, then forced to call it")
    verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model"))) if sent.raw.ok else None
    _decide(ctx, rules.reference_expanded(sent.raw, _calls(ctx, verdict), tool), judge=False)
    ctx.finish("tool_reference expanded or refused")


# ---- limits, wording, parallel calls, schemas -----------------------------------------------


def test_max_tokens_over_context(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a max_tokens of 100000 or more",
                  lambda b: isinstance(b.get("max_tokens"), int) and b["max_tokens"] >= 100000,
                  prefer=lambda cap, e: len(e.request.body_bytes()))  # the longest prompt leaves the least room
    body = _body(ctx, ex, "max_tokens")
    sent = _send(ctx, ex, body, f"as captured: max_tokens {body['max_tokens']}")
    figures = None
    if sent.raw.ok:
        verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model")))
        context, source = advertised_context(ctx, ctx.settings.served_model(body.get("model")))
        d = dialect(ctx.api)
        usage = d.usage(verdict.message) if verdict.message else None
        figures = rules.AnswerFigures(d.anthropic_stop(verdict.message), d.prompt_tokens(usage),
                                      d.output_tokens(verdict.message) if verdict.message else None, context, source)
    _decide(ctx, rules.max_tokens_outcome(sent.raw, body["max_tokens"], figures), judge=False)
    ctx.finish("max_tokens over the context")


def advertised_context(ctx, model: str | None) -> tuple[int | None, str]:
    """The target's context length: --conformance-context-limit, else what it advertises (vLLM
    `max_model_len` and the like in GET /v1/models, llama.cpp `n_ctx` in GET /props), as the
    context probes read it (conformance.probes.context.discover_limit)."""
    configured = ctx.item.config.getoption("conformance_context_limit", None)
    if configured:
        return configured, "--conformance-context-limit"
    status, doc = ctx.session.get_json("/v1/models")
    models = [m for m in (doc or {}).get("data") or [] if isinstance(m, dict)] if isinstance(doc, dict) else []
    chosen = next((m for m in models if m.get("id") == model), models[0] if models else None)
    if chosen is not None:
        for key in ("max_model_len", "context_length", "context_window", "max_context_length"):
            if isinstance(chosen.get(key), int):
                return chosen[key], f"/v1/models {key}"
        meta = chosen.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int):
            return meta["n_ctx"], "/v1/models meta.n_ctx"
    status, props = ctx.session.get_json("/props")
    if status == 200 and isinstance(props, dict):
        n_ctx = props.get("n_ctx", (props.get("default_generation_settings") or {}).get("n_ctx"))
        if isinstance(n_ctx, int):
            return n_ctx, "/props n_ctx"
    return None, ""


def test_fallback_wording(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a {role: system} entry inside messages",
                  lambda b: any(isinstance(m, dict) and m.get("role") == "system" and m.get("content")
                                for m in b.get("messages") or []))
    body = _body(ctx, ex, "system_entries")
    sent = _send(ctx, ex, body, "as captured: a {role: system} entry inside messages")
    _decide(ctx, rules.fallback_outcome(sent.raw), sent)
    ctx.finish("refusal wording lets the client fall back")


def _with_prompt(body: dict, prompt: str) -> bool:
    """Keep the messages up to the first user message and make its last text the prompt."""
    msgs = body.get("messages") or []
    for i, m in enumerate(msgs):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                m["content"] = prompt
            elif isinstance(content, list):
                texts = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
                if not texts:
                    return False
                texts[-1]["text"] = prompt
            else:
                return False
            body["messages"] = msgs[:i + 1]
            return True
    return False


def _read_tool(body) -> bool:
    return any(name.lower() in ("read", "read_file", "view") for name in dialect_names(body))


def dialect_names(body) -> list[str]:
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            name = t.get("name") or (t.get("function") or {}).get("name")
            if isinstance(name, str):
                out.append(name)
    return out


def test_parallel_calls_survive(conformance_ctx):
    ctx = conformance_ctx
    _, ex = _find(ctx, "a request offering a read tool", _read_tool)
    body = _body(ctx, ex)
    _with_prompt(body, PARALLEL_PROMPT)
    sent = _send(ctx, ex, body, "the captured first request asking for two reads at once (scenario parallel-reads)")
    if not sent.raw.ok:
        _decide(ctx, rules.accepted(rules.PARALLEL_CALLS, sent.raw, "a request asking for two tool calls"))
    else:
        verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model")))
        _decide(ctx, rules.parallel_outcome(_calls(ctx, verdict), 2), judge=False)
    ctx.finish("parallel tool calls all survive")


def _schema_clients(config) -> list[tuple[str, Capture, Exchange]]:
    """Per client, the captured request of its newest release that offers the most tools."""
    best: dict[str, tuple[tuple, int, Capture, Exchange]] = {}
    for cap in _pool(config):
        for e in cap.main_exchanges():
            n = len(dialect_names(e.request.body)) if isinstance(e.request.body, dict) else 0
            key = (_version_key(cap), n)
            if n and (cap.client not in best or key > best[cap.client][:2]):
                best[cap.client] = (*key, cap, e)
    return [(client, cap, ex) for client, (_, _, cap, ex) in sorted(best.items())]


def pytest_generate_tests(metafunc):
    if "schema_source" in metafunc.fixturenames:
        sources = _schema_clients(metafunc.config)
        if not sources:
            metafunc.parametrize("schema_source", [cases.NoCaptures("no captured request with tools")],
                                 ids=["no-captures"])
        else:
            metafunc.parametrize("schema_source", sources, ids=[s[0] for s in sources])


def test_forced_tool_schemas(schema_source, conformance_ctx):
    ctx = conformance_ctx
    if isinstance(schema_source, cases.NoCaptures):
        cases.fail_no_captures(ctx, schema_source)
    _, cap, ex = schema_source
    ctx.for_capture(cap)
    ctx.api = ex.request.api
    require_api(ctx, ctx.api)
    base = _body(ctx, ex)
    for k, tool in enumerate(base["tools"]):
        name = dialect_names({"tools": [tool]})
        if not name or tool.get("defer_loading") is True:
            continue  # a deferred tool cannot be forced before it is loaded
        body = copy.deepcopy(base)
        body["tools"] = [copy.deepcopy(tool)]  # forcing "any tool" with one tool forces that one
        body.pop("stream_options", None)
        body = dialect(ctx.api).forcing(body)
        _without_thinking(body)
        sent = _send(ctx, ex, body, f"forced to call {name[0]} (tool {k + 1} of {len(base['tools'])})")
        verdict = ctx.judge(sent, expect_model=ctx.settings.served_model(body.get("model"))) if sent.raw.ok else None
        # A namespace (Responses) is forced by calling any tool inside it.
        inner = frozenset(t.name for t in dialect(ctx.api).offered_tool_specs({"tools": [tool]}) if t.kind != "hosted")
        _decide(ctx, rules.forced_outcome(sent.raw, _calls(ctx, verdict), name[0], inner), judge=False)
    ctx.finish(f"{cap.client}: every tool schema forced")


# ---- prefix reuse (opt-in) ------------------------------------------------------------------


def _salted(body: dict, salt: str) -> None:
    """Put `salt` at the start of the first system text after the billing header and of the first
    tool's description, in every request of a pair alike: the pair shares it, earlier tests never
    saw it. Both, because a chat template may render the tools or the system text first; a salt at
    the front of both leaves nothing in common with another salt of the same length."""
    system = body.get("system")
    if isinstance(system, str):
        body["system"] = salt + system
    else:
        for b in system or []:
            if isinstance(b, dict) and isinstance(b.get("text"), str) and not b["text"].startswith(BILLING):
                b["text"] = salt + b["text"]
                break
    tools = body.get("tools") or []
    first = tools[0] if tools and isinstance(tools[0], dict) else None
    if first is not None:
        fn = first.get("function") if isinstance(first.get("function"), dict) else first
        if isinstance(fn.get("description"), str):
            fn["description"] = salt + fn["description"]


def _salt(ctx, mark: str, check_id: str) -> str:
    """This run's salt for one check's pair (its own, so two checks never share a cold prefix);
    `mark` (one character) tells the pair's salt ("w") from the cold ones."""
    import hashlib

    tag = hashlib.sha256(check_id.encode()).hexdigest()[:6]
    return f"[{mark} run {ctx.settings.run_token or 'prefix-reuse'} {tag}] "


def _pair_bodies(ctx, first: Exchange, second: Exchange, salt: str, same_system: bool) -> tuple[dict, dict]:
    """Both bodies salted alike. `same_system`: the second gets the first's system text after its
    own billing header (one project, two conversations)."""
    bodies = []
    for ex in (first, second):
        body = _body(ctx, ex)
        _salted(body, salt)
        body["stream"] = False
        bodies.append(body)
    if same_system and all(isinstance(b.get("system"), list) for b in bodies):
        shared = [b for b in bodies[0]["system"] if not (isinstance(b, dict) and str(b.get("text", "")).startswith(BILLING))]
        own = [b for b in bodies[1]["system"] if isinstance(b, dict) and str(b.get("text", "")).startswith(BILLING)]
        bodies[1]["system"] = own + copy.deepcopy(shared)  # already salted
    return bodies[0], bodies[1]


def _reported(sent, api) -> tuple[int | None, str | None, int | None]:
    """(cache-read tokens, the field, every prompt token) an answer reports."""
    import json

    from conformance.checks.exchange import check_exchange

    verdict = check_exchange(sent.raw, sent.request, wire=api)
    usage = dialect(api).usage(verdict.message) if verdict.message else None
    try:
        answer = json.loads(sent.raw.body())
    except ValueError:
        answer = None
    read, name = rules.reported_cache_read(usage, answer)
    prompt = dialect(api).prompt_tokens(usage) if isinstance(usage, dict) else None
    return read, name, prompt


def metrics_url(ctx) -> str | None:
    """--conformance-metrics-url, else the engine's /metrics (--conformance-engine-url), else the
    target's; `off` reads none."""
    given = ctx.item.config.getoption("conformance_metrics_url", None)
    if given is not None:
        return None if given.strip().lower() in ("off", "none", "") else given
    return (ctx.settings.engine_url or ctx.settings.target).rstrip("/") + "/metrics"


def read_counters(url: str | None) -> tuple[dict | None, str]:
    """The prefix-cache counters at `url`, or None and why not (absent is normal: most servers
    serve no /metrics)."""
    import httpx

    if url is None:
        return None, "metrics not read (--conformance-metrics-url off)"
    try:
        resp = httpx.get(url, timeout=5.0)
    except httpx.HTTPError as exc:
        return None, f"no metrics at {url} ({type(exc).__name__}: {str(exc)[:80]})"
    if resp.status_code != 200:
        return None, f"no metrics at {url} (HTTP {resp.status_code})"
    counters = rules.prometheus_counters(resp.text)
    if len(counters) < 2:
        return None, f"{url} has no {rules.METRIC_HITS} / {rules.METRIC_QUERIES} sample"
    return counters, ""


TTFT_TRIES = 3
TTFT_MAX_TOKENS = 16


def _timing_body(body: dict) -> dict:
    """A streamed copy that stops soon: only the time to its first content is read."""
    out = copy.deepcopy(body)
    _without_thinking(out)
    out["stream"] = True
    out["max_tokens"] = TTFT_MAX_TOKENS
    return out


def _ttft(ctx, ex: Exchange, body: dict, note: str) -> tuple[float | None, str]:
    sent = _send(ctx, ex, body, note)
    raw = sent.raw
    if not raw.ok:
        return None, f"{note}: " + (f"HTTP {raw.status}" if raw.status is not None else f"no answer ({raw.error_kind})")
    if raw.first_content_at is None:
        return None, f"{note}: no content arrived"
    return raw.first_content_at, ""


def ttft_signal(ctx, first: Exchange, second: Exchange, warm_body: dict, same_system: bool, what: str,
                check_id: str):
    """The second request (its prefix warmed by the first) against fresh salts of equal length,
    interleaved, TTFT_TRIES each. (signal or None, why not)."""
    warm, cold = [], []
    for k in range(TTFT_TRIES):
        t, why = _ttft(ctx, second, _timing_body(warm_body), f"{what}: TTFT try {k + 1}, shared prefix")
        if t is None:
            return None, f"TTFT not measured: {why}"
        warm.append(t)
        _, salted = _pair_bodies(ctx, first, second, _salt(ctx, "abcdefgh"[k], check_id), same_system)
        t, why = _ttft(ctx, second, _timing_body(salted), f"{what}: TTFT try {k + 1}, salted prefix")
        if t is None:
            return None, f"TTFT not measured: {why}"
        cold.append(t)
    return rules.ttft_signal(warm, cold), ""


def _pair(ctx, first: tuple[Capture, Exchange], second: tuple[Capture, Exchange], what: str, check_id: str,
          same_system: bool = False):
    """Send both (salted alike) and judge whether the second reused the first's prefix, by the
    first signal that can tell (rules.reuse_outcome)."""
    (_, ex1), (_, ex2) = first, second
    body1, body2 = _pair_bodies(ctx, ex1, ex2, _salt(ctx, "w", check_id), same_system)
    sent1 = _send(ctx, ex1, body1, f"{what}: request 1 of 2")
    url = metrics_url(ctx)
    before, why_metrics = read_counters(url) if sent1.raw.ok else (None, "")
    sent2 = _send(ctx, ex2, body2, f"{what}: request 2 of 2")
    for sent in (sent1, sent2):
        if not sent.raw.ok:
            ctx.judge(sent)
            return
    after = None
    if before is not None:
        import time

        after, why_metrics = read_counters(url)
        if after is not None and after.get(rules.METRIC_QUERIES) == before.get(rules.METRIC_QUERIES):
            time.sleep(0.5)  # an engine may publish its counters a moment after the answer
            after, why_metrics = read_counters(url)
    tried = []
    read, field_name, prompt = _reported(sent2, ctx.api)
    signal = None
    if read is None:
        tried.append("the answer reports no cached tokens (usage, timings)")
    else:
        signal = rules.usage_signal(read, field_name, prompt)
    if signal is None or not signal.reused:  # a reported 0 is checked against the counters
        counted = rules.metrics_signal(before, after, url) if before is not None and after is not None else None
        if counted is not None:
            signal = counted
        elif signal is None:
            tried.append(why_metrics or f"the counters at {url} did not move")
    if signal is None:
        signal, why = ttft_signal(ctx, ex1, ex2, body2, same_system, what, check_id)
        if why:
            tried.append(why)
    outcome = rules.reuse_outcome(check_id, what, signal, tried)
    details = {"signal": signal.name if signal else None, "tried": tried, "prompt_tokens": prompt,
               "cache_read_input_tokens": read if field_name == "usage.cache_read_input_tokens" else None,
               "reused_tokens": signal.reused_tokens if signal else None,
               "reprefilled_tokens": signal.reprefilled_tokens if signal else None,
               **(signal.figures if signal else {})}
    ctx.outcome(outcome.check_id, outcome.outcome, violations=outcome.violations, message=outcome.note,
                details=details)


def _billing_suffix(body) -> str | None:
    for b in body.get("system") or []:
        if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].startswith(BILLING):
            return b["text"]
    return None


@pytest.mark.prefix_reuse
def test_prefix_reuse_across_turns(conformance_ctx):
    ctx = conformance_ctx
    cap, _ = _find(ctx, "a conversation of two or more turns with a billing header",
                   lambda b: _billing_suffix(b) is not None and _last_tool_result(b) is not None)
    turns = cap.main_exchanges()[:2]
    _pair(ctx, (cap, turns[0]), (cap, turns[1]), f"{cap.id} turn 1 -> turn 2", rules.PREFIX_REUSE_TURNS)
    ctx.finish("prefix reuse across turns")


def _conversation_pair(config):
    """Two first requests of one client release with the same tools and different billing headers
    (the newest release that has such a pair). Their system text differs only where the captures'
    project folders do; the test gives the second the first's, as two conversations in one project."""
    groups: dict[tuple, list[tuple[Capture, Exchange]]] = {}
    for cap in _pool(config):
        mains = cap.main_exchanges()
        body = mains[0].request.body if mains else None
        if not isinstance(body, dict) or _billing_suffix(body) is None:
            continue
        group = groups.setdefault((cap.client, cap.client_version, tuple(dialect_names(body))), [])
        if all(_billing_suffix(ex.request.body) != _billing_suffix(body) for _, ex in group):
            group.append((cap, mains[0]))
            if len(group) == 2:
                return group
    return None


@pytest.mark.prefix_reuse
def test_prefix_reuse_across_conversations(conformance_ctx):
    ctx = conformance_ctx
    pair = _conversation_pair(ctx.item.config)
    if pair is None:
        cases.fail_no_captures(ctx, cases.NoCaptures("no two captured conversations of one client release that "
                                                     "share tools and system text with different billing headers"))
    (first, a), (second, b) = pair
    ctx.for_capture(first)
    ctx.api = a.request.api
    require_api(ctx, ctx.api)
    _pair(ctx, (first, a), (second, b), f"{first.id} -> {second.id} (billing headers differ)",
          rules.PREFIX_REUSE_CONVERSATIONS, same_system=True)
    ctx.finish("prefix reuse across conversations")
