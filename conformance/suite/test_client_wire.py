"""The checks the newest client wire needs (client_wire.*), on requests built from real captures.

Rules:
- Every request starts from a captured request of a real client (the run's corpus first, then
  the bundled captured/, newest release first), found by the shape it carries (a
  `defer_loading` tool, `thinking.display`, an empty `{"role":"system"}` entry, a tool result):
  a corpus of another release still gets these tests (conformance.suite.client_wire_requests).
- A derived request changes only what its test says, and only through the writers of its wire's
  Dialect, starting from the request as the suite sends it (the served model, the salt) without
  the shapes other tests own (`isolated`): its output cap lowered under ISOLATED_MAX_TOKENS with a
  thinking budget kept below it.
- A refusal of a shape the client sends fails that shape's own id and nothing else; an accepted
  answer is then judged as every exchange is.
- A forced tool choice goes with thinking off (the Messages API refuses both at once), as the
  loop driver forces (the Dialect's `forcing`), and only ever forces a client tool (one with an
  input schema or a freeform grammar): a server tool (`web_search_20250305`) is run by the API,
  no model call of it can be forced.
- `prefix_reuse` tests are opt-in (-m prefix_reuse): they send the pair of requests salted with
  this run's token so no earlier test warmed the cache, and read the first signal that can tell
  (conformance.suite.prefix_reuse).
"""

from __future__ import annotations

import pytest

from conformance.checks import client_wire as rules
from conformance.checks import parallel_calls
from conformance.layers.hop import find_forwarded, log_total, received_log
from conformance.probes.limit import discover
from conformance.suite import cases
from conformance.suite.client_wire_requests import (
    HISTORY_BLOCKS,
    PARALLEL_PROMPT,
    PNG_1X1,
    calls,
    client_tools,
    conversation_pair,
    decide,
    engine_emitted_calls,
    find,
    forced,
    has_billing_and_tool_result,
    has_deferred_tool,
    has_display,
    has_empty_system_entry,
    has_large_output_cap,
    has_read_tool,
    has_system_entry_text,
    has_tool_result,
    isolated,
    judge_sent,
    schema_sources,
    send,
    start,
    wire_of,
)
from conformance.suite.prefix_reuse import run_pair

# ---- shapes the client sends, accepted ------------------------------------------------------


def test_thinking_display_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "thinking.display", has_display)
    body = isolated(ctx, ex, wire, "display")
    sent = send(ctx, ex, wire, body, f"as captured: thinking {body['thinking']}")
    decide(ctx, rules.accepted(rules.THINKING_DISPLAY_ACCEPTED, sent.raw, f"thinking {body['thinking']}"), sent)
    ctx.finish("thinking.display accepted")


def test_empty_system_entry_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a {role: system} entry with content []", has_empty_system_entry)
    body = isolated(ctx, ex, wire, "system_entries")
    sent = send(ctx, ex, wire, body, "as captured: a {role: system, content: []} entry")
    decide(ctx, rules.accepted(rules.EMPTY_SYSTEM_ENTRY_ACCEPTED, sent.raw, "a {role: system} entry with content []"),
           sent)
    ctx.finish("empty system entry accepted")


def test_tool_result_image_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a tool_result block", has_tool_result)
    body = wire.with_tool_result_image(isolated(ctx, ex, wire), "image/png", PNG_1X1)
    sent = send(ctx, ex, wire, body, "the captured tool result with a PNG image block added")
    decide(ctx, rules.accepted(rules.TOOL_RESULT_IMAGE, sent.raw, "an image inside a tool_result"), sent)
    ctx.finish("image inside a tool_result accepted")


def test_history_blocks_accepted(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a tool_result block", has_tool_result)
    body = wire.with_replayed_blocks(isolated(ctx, ex, wire), HISTORY_BLOCKS)
    sent = send(ctx, ex, wire, body, "the captured tool loop with redacted_thinking, server_tool_use and "
                                     "web_search_tool_result replayed in history")
    decide(ctx, rules.accepted(rules.HISTORY_BLOCKS, sent.raw, "redacted_thinking / server tool blocks in history"),
           sent)
    ctx.finish("history blocks accepted")


# ---- deferred tools -------------------------------------------------------------------------


def test_deferred_tool_not_callable(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a defer_loading tool", has_deferred_tool)
    body = isolated(ctx, ex, wire)
    deferred = set(wire.deferred_tools(body))
    schemas = wire.offered_tools(body)
    # The deferred tools first, then the tools loaded from the start: a model forced to call "any
    # tool" may pick only a loaded one. (Tools whose schema a decoder may not compile stay out.)
    tools = wire.tool_definitions(body)
    loaded = [t for t in tools if (name := wire.tool_name(t)) not in deferred and schemas.get(name) is not None][:1]
    body = forced(wire, wire.with_tools(body, [t for t in tools if wire.tool_name(t) in deferred] + loaded))
    since = log_total(ctx.settings.engine_url) if ctx.settings.engine_url else None
    sent = send(ctx, ex, wire, body, f"forced to call any tool; deferred: {', '.join(sorted(deferred))}")
    if ctx.settings.engine_url:
        # Through a router: what the engine was offered tells it, whatever the model then called.
        log = received_log(ctx.settings.engine_url)
        forwarded = find_forwarded(log["requests"], body, since, wire=wire) if log else None
        leaked = rules.forwarded_deferred((forwarded or {}).get("body"), deferred)
        if leaked is not None:
            decide(ctx, leaked, judge=False)
    if not sent.raw.ok:
        decide(ctx, rules.accepted(rules.DEFERRED_NOT_CALLABLE, sent.raw, "defer_loading tools"))
    else:
        verdict = judge_sent(ctx, sent)
        decide(ctx, rules.deferred_not_called(calls(wire, verdict), deferred), judge=False)
    ctx.finish("deferred tools are not callable")


def test_tool_reference_expanded(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a defer_loading tool and a tool result",
                       lambda w, b: has_deferred_tool(w, b) and has_tool_result(w, b))
    body = isolated(ctx, ex, wire)
    tool = sorted(wire.deferred_tools(body))[0]
    names = [wire.tool_name(t) or "" for t in wire.tool_definitions(body)]
    search = next((n for n in names if "search" in n.lower()), None)
    # The client's tool search answered: the call becomes a search, its result the tool's reference.
    body = forced(wire, wire.with_tool_reference(body, tool, search=search), tool)
    sent = send(ctx, ex, wire, body, f"a tool_result holding a tool_reference to {tool}, then forced to call it")
    verdict = judge_sent(ctx, sent) if sent.raw.ok else None
    decide(ctx, rules.reference_expanded(sent.raw, calls(wire, verdict), tool), judge=False)
    ctx.finish("tool_reference expanded or refused")


# ---- limits, wording, parallel calls, schemas -----------------------------------------------


def test_max_tokens_over_context(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a max_tokens of 100000 or more", has_large_output_cap,
                       prefer=lambda cap, e: len(e.request.body_bytes()))  # the longest prompt leaves the least room
    body = isolated(ctx, ex, wire, "max_tokens")
    cap = wire.output_cap(body)
    sent = send(ctx, ex, wire, body, f"as captured: max_tokens {cap}")
    figures = None
    if sent.raw.ok:
        verdict = judge_sent(ctx, sent)
        limit = discover(ctx.session.get_json, ctx.settings.served_model(body.get("model")),
                         ctx.item.config.getoption("conformance_context_limit", None))
        context, source = limit.limit, limit.origin
        usage = wire.usage(verdict.message) if verdict.message else None
        figures = rules.AnswerFigures(wire.anthropic_stop(verdict.message), wire.prompt_tokens(usage),
                                      wire.output_tokens(verdict.message) if verdict.message else None, context,
                                      source)
    decide(ctx, rules.max_tokens_outcome(sent.raw, cap, figures), judge=False)
    ctx.finish("max_tokens over the context")


def test_fallback_wording(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a {role: system} entry inside messages", has_system_entry_text)
    body = isolated(ctx, ex, wire, "system_entries")
    sent = send(ctx, ex, wire, body, "as captured: a {role: system} entry inside messages")
    decide(ctx, rules.fallback_outcome(sent.raw), sent)
    ctx.finish("refusal wording lets the client fall back")


def test_parallel_calls_survive(conformance_ctx):
    ctx = conformance_ctx
    _, ex, wire = find(ctx, "a request offering a read tool", has_read_tool)
    body = wire.with_prompt(isolated(ctx, ex, wire), PARALLEL_PROMPT, first_turn=True)
    since = log_total(ctx.settings.engine_url) if ctx.settings.engine_url else None
    sent = send(ctx, ex, wire, body, "the captured first request asking for two reads at once (scenario parallel-reads)")
    if not sent.raw.ok:
        decide(ctx, rules.accepted(parallel_calls.PARALLEL_CALLS, sent.raw, "a request asking for two tool calls"))
    else:
        verdict = judge_sent(ctx, sent)
        got = calls(wire, verdict)
        # Fewer calls than asked are the model's choice unless the engine or the stream shows a loss.
        emitted = engine_emitted_calls(ctx, wire, body, since) if len(got) < 2 else None
        decide(ctx, parallel_calls.parallel_outcome(got, 2, emitted=emitted, loss=parallel_calls.stream_loss(verdict.violations)),
               judge=False)
    ctx.finish("parallel tool calls all survive")


def pytest_generate_tests(metafunc):
    if "schema_source" in metafunc.fixturenames:
        sources = schema_sources(metafunc.config)
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
    wire = wire_of(ex)
    start(ctx, cap, wire)
    base = isolated(ctx, ex, wire)
    tools = wire.tool_definitions(base)
    deferred = set(wire.deferred_tools(base))
    for k, tool in enumerate(tools):
        name = wire.tool_name(tool)
        if name is None or name in deferred:
            continue  # a deferred tool cannot be forced before it is loaded
        alone = wire.with_tools(base, [tool])
        if not client_tools(wire, alone):
            continue  # a server tool (web search) runs on the API's side: no client's call to force
        body = forced(wire, alone)  # forcing "any tool" with one tool forces that one
        sent = send(ctx, ex, wire, body, f"forced to call {name} (tool {k + 1} of {len(tools)})")
        verdict = judge_sent(ctx, sent) if sent.raw.ok else None
        # A namespace (Responses) is forced by calling any tool inside it.
        inner = frozenset(t.name for t in wire.offered_tool_specs(body) if t.kind != "hosted")
        decide(ctx, rules.forced_outcome(sent.raw, calls(wire, verdict), name, inner), judge=False)
    ctx.finish(f"{cap.client}: every tool schema forced")


# ---- prefix reuse (opt-in) ------------------------------------------------------------------


@pytest.mark.prefix_reuse
def test_prefix_reuse_across_turns(conformance_ctx):
    ctx = conformance_ctx
    cap, _, _ = find(ctx, "a conversation of two or more turns with a billing header", has_billing_and_tool_result)
    turns = cap.main_exchanges()[:2]
    run_pair(ctx, (cap, turns[0]), (cap, turns[1]), f"{cap.id} turn 1 -> turn 2", rules.PREFIX_REUSE_TURNS)
    ctx.finish("prefix reuse across turns")


@pytest.mark.prefix_reuse
def test_prefix_reuse_across_conversations(conformance_ctx):
    ctx = conformance_ctx
    pair = conversation_pair(ctx.item.config)
    if pair is None:
        cases.fail_no_captures(ctx, cases.NoCaptures("no two captured conversations of one client release that "
                                                     "share tools and system text with different billing headers"))
    (first, a), (second, b) = pair
    start(ctx, first, wire_of(a))
    run_pair(ctx, (first, a), (second, b), f"{first.id} -> {second.id} (billing headers differ)",
             rules.PREFIX_REUSE_CONVERSATIONS, same_system=True)
    ctx.finish("prefix reuse across conversations")
