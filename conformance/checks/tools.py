"""Tool-call checks (`tools.*`): calls arrive structured, name an offered tool, fit its schema.

Rules:
- Works on the accumulated message of any wire through its Dialect (conformance.wire.dialect:
  `tool_calls` as the one `ToolCall`, `text`, `offered_tools`, the stop vocabulary): Anthropic
  `tool_use` blocks with a parsed `input`, OpenAI `tool_calls` with `function.arguments` as a
  JSON string, Responses `function_call` / `custom_tool_call` items.
- Three exchange checks run here (scope "exchange", after the grammar): `call_structured`
  (order 60, `tools.call_structured`), `arguments` (order 80, registered under
  `tools.arguments_schema`, reporting `tools.name_offered` and `tools.call_cut` too) and `kept`
  (order 85, registered under `tools.custom_tool_kept`, reporting `tools.namespace_kept` too).
  `structured_outcome`, `arguments_outcomes` and `kept_outcomes` give their verdicts as
  `Verdict`s; `check_call_structured` / `check_arguments` give the bare violations.
- `check_argument_json` is the standalone judge's (`conformance check-stream`): argument JSON on
  every wire, with or without the request (the Responses stream grammar has no argument rule).
- What each judges: the stack — the engine's tool parser, a router's translation of tools —
  except `tools.call_cut`, which judges the model: the stream and the parser were fine, the
  model did not close its call within the output cap.
- `tools.call_structured` fires only when the request offered tools and no structured call came
  while the answer's text looks like a call: the signature of an engine running without its
  tool-call parser (vLLM needs `--enable-auto-tool-choice --tool-call-parser NAME`; opencode
  #1122). Looks like a call: a marker that names the function itself (`<function=NAME>`,
  `<invoke name=`); a bare template marker (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, ...)
  followed by a call's body — not straight away a closing tag, and within the next 300
  characters (up to the marker's own closing tag) a `{`, a `[` or an offered tool's name; or
  call-shaped JSON naming an offered tool (`{"name": TOOL, "arguments": ...}`, function-call
  JSON). A marker alone is not a call: a small model echoing its chat template's instruction
  ("reply with <tool_call></tool_call> tags around one JSON object ...") wrote no call.
- `tools.arguments_schema` validates every call's arguments against that tool's `input_schema`
  (Anthropic) / `parameters` (OpenAI) from the request, with the schema's own draft
  (2020-12 when it declares none, as Claude Code and opencode send). Compiled validators are
  cached per schema text: Claude Code sends ~24 tool schemas (~64 KB) with every turn.
- Arguments that are not JSON at all are reported here too (the wire core reports the stream
  rule; this check names the tool and the schema, which is what a user fixes). Anthropic streams
  carry a tool input that did not parse as `{}`; the wire core hands its text over
  (`StreamReport.unparsed_tool_input`), so such a call is judged as not parsing, like OpenAI's.
- On the Responses wire (Codex): a `custom` (freeform) tool's call is a `custom_tool_call` whose
  raw `input` is never JSON (`tools.custom_tool_kept` fails when it came back as a function_call
  with JSON arguments instead: Codex refuses it, "invoked with incompatible payload"); its input
  is held to the framing its grammar names (apply_patch: `*** Begin Patch` ... `*** End Patch`)
  under `tools.arguments_schema`. A call to a tool inside a `namespace` keeps `name` and
  `namespace` apart (`tools.namespace_kept` fails on a flattened or prefixed name —
  `multi_agent_v1.spawn_agent`, `multi_agent_v1__spawn_agent` — or a missing namespace; such a
  call is not also reported as naming an unoffered tool). A patch written out as text while a
  freeform patch tool was offered is `tools.call_structured` (the tool call was dropped).
- A function tool offered with `strict: true` is held to the schema exactly: every property
  required and no property beyond them (what OpenAI's strict mode promises), unless the schema
  itself says otherwise.
- `tools.call_cut` (a warning): a turn whose stop reason says the output was cut (OpenAI
  finish_reason length / content_filter, Anthropic stop_reason max_tokens, pause_turn, refusal,
  model_context_window_exceeded) can only have cut its LAST tool call. When that call's arguments
  do not parse to a JSON object or fail its schema, it is reported as cut, not as
  `tools.arguments_schema`: the stream is well-formed and the engine's parser is not at fault,
  the cap the client set ended the turn. Earlier calls, and every call of a turn that was not
  cut, are judged by `tools.arguments_schema` as usual.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from conformance.checks.exchange_state import ExchangeState
from conformance.core.failures import Violation
from conformance.core.registry import check, register, violation
from conformance.core.verdict import Verdict, outcome_of
from conformance.wire.conversation import OfferedTool, ToolCall
from conformance.wire.dialect import Dialect

# Registered with their code below (the exchange checks).
CALL_STRUCTURED = "tools.call_structured"
ARGUMENTS_SCHEMA = "tools.arguments_schema"
CUSTOM_TOOL_KEPT = "tools.custom_tool_kept"

CALL_CUT = register(
    "tools.call_cut",
    "a tool call is complete, not cut off by the output cap",
    description="When a turn ends with a cut stop reason (finish_reason length / content_filter, stop_reason "
    "max_tokens, ...), its last tool call is reported here, as a warning, if its arguments do not parse to a "
    "JSON object or fail the tool's schema: the output was cut, the stream and the engine's parser are fine.",
    severity="warning",
    likely_cause=(
        "the output cap (max_tokens) ended the turn inside a tool call: the model did not close the call within "
        "the cap; raise max_tokens, or the model rambles inside the arguments"
    ),
    scope="exchange",
    judges="model",
).id

NAME_OFFERED = register(
    "tools.name_offered",
    "every tool call names a tool the request offered",
    likely_cause=(
        "a router renamed or dropped tools in translation, or the model hallucinated a tool "
        "(a chat template that did not render the tool list)"
    ),
    scope="exchange",
    judges="stack",
).id

NAMESPACE_KEPT = register(
    "tools.namespace_kept",
    "a call to a tool inside a namespace keeps its name and its namespace apart",
    likely_cause=(
        "the server flattens namespace tools into top-level functions (vLLM #46737) and answers with a prefixed "
        "name or without `namespace`; Codex cannot route the call to the namespace's handler"
    ),
    scope="exchange",
    judges="stack",
).id

# Separators servers use when they flatten a namespace into a tool name (seen: "." and "__").
_FLATTEN_SEPARATORS = (".", "__", "_", "/", ":", "-")
# Framing of freeform patch tools: a grammar that names these delimits its input with them.
PATCH_BEGIN, PATCH_END = "*** Begin Patch", "*** End Patch"


# Markers that tool-call chat templates emit when the server does not parse them (hermes/qwen,
# llama 3.x, mistral, functionary, Claude-style XML). Facts from the public chat templates.
# Bare markers open a call's body, with the closing tag where the template has one; named
# markers carry the function's name themselves.
_BARE_MARKERS: dict[str, str | None] = {
    "<tool_call>": "</tool_call>",  # hermes, qwen
    "<|tool_call|>": "<|/tool_call|>",  # phi-4-mini
    "<|tool_calls_section_begin|>": "<|tool_calls_section_end|>",  # kimi
    "<|python_tag|>": None,  # llama 3.x
    "[TOOL_CALLS]": None,  # mistral
    "<function_calls>": "</function_calls>",  # Claude-style XML
    "<tool_use>": "</tool_use>",
    "<|action_start|>": "<|action_end|>",  # internlm
}
_TEXT_CALL_MARKERS = re.compile(
    "|".join(re.escape(m) for m in _BARE_MARKERS) + r"|<function=[\w.\-]+>|<invoke name=",
)
CALL_BODY_WINDOW = 300  # characters after a bare marker in which a call's body must show
_JSON_CALL = re.compile(
    r'\{\s*"(?:name|tool|tool_name)"\s*:\s*"(?P<name>[^"]{1,80})"\s*,\s*"(?:arguments|parameters|input|args)"\s*:'
    r'|\{\s*"(?:arguments|parameters|input)"\s*:\s*\{.{0,2000}?\}\s*,\s*"name"\s*:\s*"(?P<name2>[^"]{1,80})"'
    r'|"function"\s*:\s*\{\s*"name"\s*:\s*"(?P<name3>[^"]{1,80})"',
    re.DOTALL,
)


def _opens_a_call(text: str, marker: re.Match, offered: set[str] | None) -> bool:
    """A named marker always; a bare marker when what follows looks like a call's body."""
    if marker.group() not in _BARE_MARKERS:
        return True  # <function=NAME>, <invoke name=: the name is in the marker
    closer = _BARE_MARKERS[marker.group()]
    rest = text[marker.end():]
    head = rest.lstrip()
    if head.startswith("</") or (closer and head.startswith(closer)):
        return False  # "<tool_call></tool_call>": the tag named, no call inside
    body = rest[:CALL_BODY_WINDOW]
    if closer and closer in body:
        body = body[:body.index(closer)]
    if "{" in body or "[" in body:
        return True
    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", body, re.IGNORECASE) for name in offered or ())


def looks_like_call(text: str, offered: set[str] | None = None) -> re.Match | None:
    """The first place where `text` looks like a tool call written out as text: a template's
    tool-call marker followed by a call (see the module rules), or call-shaped JSON naming an
    offered tool (JSON naming anything else is more likely an answer about JSON than a lost call)."""
    for marker in _TEXT_CALL_MARKERS.finditer(text):
        if _opens_a_call(text, marker, offered):
            return marker
    wanted = {n.lower() for n in offered} if offered is not None else None
    for m in _JSON_CALL.finditer(text):
        name = (m.group("name") or m.group("name2") or m.group("name3") or "").lower()
        if wanted is None or name in wanted:
            return m
    return None


def check_call_structured(message: Any, request: dict | None, wire: Dialect, *,
                          turn: int | None = None) -> list[Violation]:
    offered = wire.offered_tools(request)
    if not offered or wire.tool_calls(message):
        return []
    text = wire.text(message)
    m = looks_like_call(text, set(offered))
    patch = _patch_tool(wire.offered_tool_specs(request))
    if m is None and patch is not None:
        m = re.search(re.escape(PATCH_BEGIN), text)
    if m is None:
        return []
    start = max(0, m.start() - 40)
    snippet = text[start:m.start() + 160]
    return [violation(
        CALL_STRUCTURED,
        f"the answer contains a tool call written as text and no structured tool call ({wire.structured_call})",
        expected=f"a structured call to one of the offered tools ({', '.join(sorted(offered)[:8])}"
        + (", ..." if len(offered) > 8 else "") + ")",
        seen=f"text: {snippet!r}",
        pointer="/content",
        turn=turn,
    )]


@lru_cache(maxsize=256)
def _validator(schema_text: str):
    schema = json.loads(schema_text)
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _call_cut(call: ToolCall, reason: str, wire: Dialect, problem: str, turn: int | None) -> Violation:
    text = call.raw if call.raw is not None else json.dumps(call.arguments, ensure_ascii=False)
    return violation(
        CALL_CUT, f"the turn was {wire.describe_cut(reason)} inside the call to {call.name!r}: its arguments "
        f"{problem}", expected="a complete call within the output cap (max_tokens)",
        seen=f"arguments text {text[:300]!r}", pointer=call.pointer, turn=turn)


def check_arguments(message: Any, request: dict | None, wire: Dialect, *, turn: int | None = None,
                    unparsed_input: dict[str, str] | None = None) -> tuple[list[Violation], list[str]]:
    """Violations of `tools.name_offered` / `tools.arguments_schema` / `tools.call_cut`, and notes
    (unjudgeable schemas). `unparsed_input`: see `Dialect.tool_calls`."""
    offered = wire.offered_tools(request)
    out: list[Violation] = []
    notes: list[str] = []
    calls = wire.tool_calls(message, unparsed_input)
    cut = wire.cut_reason(message)
    specs = wire.offered_tool_specs(request)
    for i, call in enumerate(calls):
        may_be_cut = cut is not None and i == len(calls) - 1  # only the last call can be cut
        spec = resolve_call(call, specs)
        if spec is None:
            out.append(violation(
                NAME_OFFERED, f"the call names tool {call.name!r}, which the request did not offer",
                expected=f"one of {sorted(offered)}", seen=call.name, pointer=call.pointer.rsplit("/", 1)[0],
                turn=turn))
            continue
        if spec.kind == "custom" or call.kind == "custom":
            if call.kind == "custom" and spec.kind == "custom":
                found = _framing_problem(call, spec, may_be_cut, wire, cut, turn)
                out.extend(found)
            elif call.kind == "custom":
                out.append(violation(
                    ARGUMENTS_SCHEMA, f"a custom_tool_call to {call.name!r}, which the request offered as a "
                    f"{spec.kind} tool", expected="a function_call with JSON arguments",
                    seen=f"input {call.raw[:200]!r}" if call.raw else "a custom_tool_call", pointer=call.pointer,
                    turn=turn))
            else:
                notes.append(f"tool {call.name!r} is freeform; its function_call is judged by {CUSTOM_TOOL_KEPT}")
            continue
        if call.arguments is None:
            if may_be_cut:
                out.append(_call_cut(call, cut, wire, f"do not parse to a JSON object ({call.parse_error})", turn))
                continue
            out.append(violation(
                ARGUMENTS_SCHEMA, f"the arguments of the call to {call.name!r} do not parse to a JSON object",
                expected="a JSON object matching the tool's schema", seen=(call.parse_error or "")
                + (f"; arguments text {call.raw[:200]!r}" if call.raw is not None else ""),
                pointer=call.pointer, turn=turn))
            continue
        schema = _strict(spec.schema) if spec.strict else spec.schema
        if not isinstance(schema, dict):
            notes.append(f"tool {call.name!r} has no schema in the request; arguments not validated")
            continue
        try:
            validator = _validator(json.dumps(schema, sort_keys=True))
        except (SchemaError, ValueError) as exc:
            notes.append(f"tool {call.name!r}: its schema is not a valid JSON Schema ({exc}); arguments not validated")
            continue
        errors = sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.absolute_path))
        if errors and may_be_cut:
            out.append(_call_cut(call, cut, wire, f"violate its schema: {errors[0].message}", turn))
            continue
        for err in errors[:3]:
            where = _pointer(err.absolute_path)
            out.append(violation(
                ARGUMENTS_SCHEMA,
                f"the arguments of the call to {call.name!r} violate its schema: {err.message}",
                expected=f"schema rule {'/'.join(str(p) for p in err.absolute_schema_path)}",
                seen=json.dumps(call.arguments, ensure_ascii=False)[:300],
                pointer=call.pointer + where, turn=turn))
    return out, notes


def check_argument_json(message: Any, wire: Dialect, *, turn: int | None = None,
                        unparsed_input: dict[str, str] | None = None) -> list[Violation]:
    """A standalone judge's argument check (`conformance check-stream`), on every wire, with or
    without the request: every structured call whose arguments do not parse to a JSON object
    (`tools.arguments_schema`, or `tools.call_cut` for the last call of a cut turn). A freeform
    (custom) call's raw input is never JSON and is not judged here; nor are names and schemas,
    which a saved body's request may not carry."""
    calls = wire.tool_calls(message, unparsed_input)
    cut = wire.cut_reason(message)
    out: list[Violation] = []
    for i, call in enumerate(calls):
        if call.kind == "custom" or call.arguments is not None:
            continue
        if cut is not None and i == len(calls) - 1:
            out.append(_call_cut(call, cut, wire, f"do not parse to a JSON object ({call.parse_error})", turn))
            continue
        out.append(violation(
            ARGUMENTS_SCHEMA, f"the arguments of the call to {call.name!r} do not parse to a JSON object",
            expected="a JSON object", seen=(call.parse_error or "")
            + (f"; arguments text {call.raw[:200]!r}" if call.raw is not None else ""), pointer=call.pointer,
            turn=turn))
    return out


def structured_outcome(message: Any, request: dict | None, wire: Dialect, *,
                       turn: int | None = None) -> Verdict | None:
    """`tools.call_structured` for one exchange, or None when the request offered no tools."""
    if not wire.offered_tools(request):
        return None
    return Verdict.from_violations(CALL_STRUCTURED, check_call_structured(message, request, wire, turn=turn))


@check(
    CALL_STRUCTURED,
    "tool calls arrive structured (tool_use / tool_calls), not as text that looks like a call",
    likely_cause=(
        "the engine runs without its tool-call parser, so the model's call is returned as text: "
        "vLLM needs --enable-auto-tool-choice --tool-call-parser NAME (hermes, qwen3_coder, "
        "llama3_json, ...), llama.cpp needs --jinja; a router that flattens tool calls into text "
        "does the same (opencode #1122)"
    ),
    scope="exchange",
    judges="stack",
    order=60,
)
def call_structured(state: ExchangeState) -> list[Verdict]:
    """Tools offered: calls arrive structured, not as text that looks like a call."""
    return state.answer_verdicts(structured_outcome)


def arguments_outcomes(message: Any, request: dict | None, wire: Dialect, *, turn: int | None = None,
                       unparsed_input: dict[str, str] | None = None) -> list[Verdict]:
    """`tools.name_offered`, `tools.call_cut` and `tools.arguments_schema` for one exchange (none
    without a structured call): the three verdicts first, in that order, then each violation as
    found (call by call), carrying its check's verdict. `arguments_schema` is unverifiable when
    no call's schema could be judged."""
    calls = wire.tool_calls(message, unparsed_input)
    if not calls:
        return []
    found, notes = check_arguments(message, request, wire, turn=turn, unparsed_input=unparsed_input)
    unjudged = bool(notes) and len(notes) >= len(calls)  # no call's schema could be judged

    def outcome(check_id: str, clean: str = "passed") -> str:
        return outcome_of([x for x in found if x.check_id == check_id], clean=clean)

    verdict = {NAME_OFFERED: outcome(NAME_OFFERED), CALL_CUT: outcome(CALL_CUT),
               ARGUMENTS_SCHEMA: outcome(ARGUMENTS_SCHEMA, "unverifiable" if unjudged else "passed")}
    out = [Verdict(NAME_OFFERED, verdict[NAME_OFFERED]), Verdict(CALL_CUT, verdict[CALL_CUT]),
           Verdict(ARGUMENTS_SCHEMA, verdict[ARGUMENTS_SCHEMA], note="; ".join(notes))]
    return out + [Verdict(x.check_id, verdict[x.check_id], (x,)) for x in found]


@check(
    ARGUMENTS_SCHEMA,
    "every tool call's arguments parse and validate against that tool's schema in the request",
    likely_cause=(
        "the engine's tool parser produced partial or malformed arguments (vLLM #35266, #41739; "
        "opencode #8102), or the model ignored the schema (wrong property names, e.g. path vs "
        "file_path)"
    ),
    scope="exchange",
    judges="stack",
    order=80,
)
def arguments(state: ExchangeState) -> list[Verdict]:
    """Every structured call names an offered tool and fits its schema (or was cut by the cap)."""
    return arguments_outcomes(state.message, state.request, state.wire, turn=state.turn,
                              unparsed_input=state.unparsed_input)


def kept_outcomes(message: Any, request: dict | None, wire: Dialect, *, turn: int | None = None) -> list[Verdict]:
    """`tools.custom_tool_kept` and `tools.namespace_kept` for one exchange: each judged when the
    request offered a tool of its kind and a call to one came back (nothing otherwise)."""
    specs = wire.offered_tool_specs(request)
    calls = wire.tool_calls(message)
    out: list[Verdict] = []
    custom = [c for c in calls if (s := resolve_call(c, specs)) is not None and s.kind == "custom"]
    if custom:
        out.append(Verdict.from_violations(CUSTOM_TOOL_KEPT, (violation(
            CUSTOM_TOOL_KEPT, f"the freeform tool {c.name!r} was answered with a function_call and JSON arguments",
            expected="a custom_tool_call whose input is the raw text", seen=f"arguments {(c.raw or '')[:200]!r}",
            pointer=c.pointer, turn=turn) for c in custom if c.kind != "custom")))
    spaced = [(c, s) for c in calls if (s := resolve_call(c, specs)) is not None and s.namespace]
    if spaced:
        out.append(Verdict.from_violations(
            NAMESPACE_KEPT, (v for c, s in spaced if (v := _namespace_problem(c, s, turn)) is not None)))
    return out


@check(
    CUSTOM_TOOL_KEPT,
    "a call to a freeform (custom) tool comes back as a custom_tool_call with raw text input",
    likely_cause=(
        "the server or router converts freeform tools to function tools and answers a function_call with JSON "
        "arguments; Codex's apply_patch then fails: \"invoked with incompatible payload\" (antirez/ds4 #745, "
        "CLIProxyAPI #5753)"
    ),
    scope="exchange",
    judges="stack",
    order=85,
)
def kept(state: ExchangeState) -> list[Verdict]:
    """Freeform tools come back freeform, namespaced tools keep their namespace."""
    return kept_outcomes(state.message, state.request, state.wire, turn=state.turn)


def resolve_call(call: ToolCall, specs: list[OfferedTool]) -> OfferedTool | None:
    """The offered tool a call is to: by (namespace, name), else by name, else a namespaced tool
    whose flattened name (`ns.name`, `ns__name`, ...) the call carries. None: not offered."""
    for spec in specs:
        if spec.name == call.name and spec.namespace == call.namespace and spec.kind != "hosted":
            return spec
    for spec in specs:
        if spec.name == call.name and spec.kind != "hosted":
            return spec
    for spec in specs:
        if spec.namespace and call.name in _flattened(spec):
            return spec
    return next((s for s in specs if s.name == call.name), None)


def _flattened(spec: OfferedTool) -> set[str]:
    ns = spec.namespace or ""
    return {ns + sep + spec.name for sep in _FLATTEN_SEPARATORS} | {spec.name + sep + ns for sep in _FLATTEN_SEPARATORS}


def _namespace_problem(call: ToolCall, spec: OfferedTool, turn: int | None) -> Violation | None:
    if call.name == spec.name and call.namespace == spec.namespace:
        return None
    if call.name != spec.name:
        what = f"came back flattened as {call.name!r}"
    elif call.namespace is None:
        what = "came back without its namespace"
    else:
        what = f"came back in namespace {call.namespace!r}"
    return violation(
        NAMESPACE_KEPT, f"the call to {spec.name!r} of namespace {spec.namespace!r} {what}",
        expected=f"name {spec.name!r} and namespace {spec.namespace!r}",
        seen=f"name {call.name!r}, namespace {call.namespace!r}", pointer=call.pointer.rsplit("/", 1)[0], turn=turn)


def _patch_tool(specs: list[OfferedTool]) -> OfferedTool | None:
    """The offered freeform tool whose grammar frames its input as a patch (Codex's apply_patch)."""
    return next((s for s in specs if s.kind == "custom" and s.grammar and PATCH_BEGIN in s.grammar), None)


def _framing_problem(call: ToolCall, spec: OfferedTool, may_be_cut: bool, wire: Dialect, cut: str | None,
                     turn: int | None) -> list[Violation]:
    """A freeform call's input against the framing its grammar names (patch tools only)."""
    if not (spec.grammar and PATCH_BEGIN in spec.grammar):
        return []
    text = call.raw or ""
    body = text.strip()
    if body.startswith(PATCH_BEGIN) and body.endswith(PATCH_END):
        return []
    problem = f"is not framed by {PATCH_BEGIN!r} ... {PATCH_END!r}"
    if may_be_cut and cut is not None and body.startswith(PATCH_BEGIN):
        return [_call_cut(call, cut, wire, problem, turn)]
    return [violation(ARGUMENTS_SCHEMA, f"the input of the call to {call.name!r} {problem} (its grammar)",
                      expected=f"{PATCH_BEGIN} ... {PATCH_END}", seen=f"input {text[:200]!r}", pointer=call.pointer,
                      turn=turn)]


def _strict(schema: dict | None) -> dict | None:
    """The schema as strict mode holds it: every object's properties all required, none beyond
    them (where the schema does not say otherwise itself)."""
    if not isinstance(schema, dict):
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        props = out.get("properties")
        if isinstance(props, dict) and (out.get("type") == "object" or "type" not in out):
            out.setdefault("additionalProperties", False)
            out.setdefault("required", list(props))
        return out

    return walk(schema)
