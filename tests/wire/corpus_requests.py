"""The requests of the bundled corpus (captured/: Claude Code, opencode, Codex), for the Dialect
tests: every main exchange whose body is a JSON object, with the wire its path names; and what
every writer derives from one."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.capture.corpus import scan
from conformance.core.paths import captured_dir
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect_for_path


@dataclass(frozen=True)
class CorpusRequest:
    id: str  # client/version/case#n
    path: str
    wire: Dialect
    body: dict

    @property
    def is_count_tokens(self) -> bool:
        return self.wire.is_count_tokens(self.path)


def corpus_requests() -> list[CorpusRequest]:
    root = captured_dir()
    out = []
    for path, capture in scan(root):
        case = path.relative_to(root).with_suffix("").as_posix()
        for n, ex in enumerate(capture.main_exchanges()):
            wire = dialect_for_path(ex.request.path)
            if wire is not None and isinstance(ex.request.body, dict):
                out.append(CorpusRequest(f"{case}#{n}", ex.request.path, wire, ex.request.body))
    return out


BILLING = "x-anthropic-billing-header:"  # Claude Code's first system block: kept first when salting
CAPS = (64000, 4096, 1500, 1000)  # above a budget, lowering one, the lowest that keeps one, none fits
CORPUS = corpus_requests()
GENERATION = [r for r in CORPUS if not r.is_count_tokens]


def of_wire(name: str, requests: list[CorpusRequest] = GENERATION) -> list[CorpusRequest]:
    return [r for r in requests if r.wire.name == name]


def forced_tool(wire: Dialect, body: dict) -> str | None:
    """An offered tool a request may force (a deferred one needs a tool search first)."""
    deferred = {wire.tool_name(t) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("defer_loading")}
    return next((t.name for t in wire.offered_tool_specs(body) if t.kind != "hosted" and t.name not in deferred
                 and t.namespace is None), None)


def derived(wire: Dialect, body: dict, caps: tuple[int, ...] = CAPS):
    """(name, output) of every writer applied to `body`."""
    yield "with_model", wire.with_model(body, "another-model")
    if wire.prompt(body) is not None:
        yield "with_prompt", wire.with_prompt(body, "say hi")
        yield "with_prompt first_turn", wire.with_prompt(body, "say hi", first_turn=True)
        yield "first_turn", wire.first_turn(body)
        yield "quoted", wire.quoted(body)
    yield "with_tools", wire.with_tools(body, [])
    if wire.offered_tools(body):
        yield "forcing any", wire.forcing(body)
        name = forced_tool(wire, body)
        if name is not None:
            yield "forcing named", wire.forcing(body, name)
    for cap in caps:
        yield f"with_output_cap {cap}", wire.with_output_cap(body, cap)
    yield "without_thinking", wire.without_thinking(body)
    yield "without_system_entries", wire.without_system_entries(body)
    yield "salted", wire.salted(body, "[run 1] ")
    yield "salted_prefix", wire.salted_prefix(body, "[salt 1] ", skip=BILLING)
    counted = wire.count_tokens_request(body)
    if counted is not None:
        yield "count_tokens_request", counted
