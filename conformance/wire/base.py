"""What the wire grammars (one package per wire) share.

Rules:
- Each wire's grammar (`<wire>/grammar.py`, what its Dialect's `grammar` is) offers the same
  API: `check_stream(chunks, *, request=None) -> StreamReport`, `check_response(body, *,
  request=None) -> (message, violations)`, `check_error(status, body) -> violations` and
  `content_started(buf) -> bool`.
- Transitions are data (a table state x event -> state) in the wire's `rules.py`; an illegal
  event yields a violation naming the event number, the event, the state and the rule.
- JSON Schemas (draft 2020-12) live in each wire package's `schemas/` folder (`schema_path`), and
  are compiled once, on first use; a wire defined outside `conformance/wire/` adds its folder
  with `add_schema_folder`.
  A schema error becomes a violation whose check id comes from the protocol's table (pointer
  prefix -> check id), so "stop_sequence missing" is reported as
  `anthropic.stream.stop_sequence_present`, not as a generic schema error.
- Every rule a grammar reports is registered with `register_rule`: scope `wire` (the state
  machine reports it, no runner calls it) and judging the `stack` (the bytes a stack produced).
- Nothing here raises on a target's bytes: bad input is a violation. Every JSON a target sent is
  parsed by the one bounded parser (`load_json`, `fast_json`, `parse_json`); a parse failure's
  check is `json_check(reason, the wire's own id)`: `suite.limits.json_depth` past the bound.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from conformance.core.bounded_json import MAX_BYTES, MAX_DEPTH, is_bound_reason
from conformance.core.bounded_json import parse as parse_json
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import CheckSpec, add_area, register, violation
from conformance.wire.sse import SSEDecoder, SSEEvent, iter_chunks


def register_rule(check_id: str, title: str, **kw: Any) -> CheckSpec:
    """Register one rule of a wire's grammar (scope wire, judges stack; see `register`). Its id
    starts with the wire's name, which becomes an area of check ids (a wire defined outside this
    package brings its own)."""
    add_area(check_id.split(".", 1)[0])
    return register(check_id, title, scope="wire", judges="stack", **kw)


@dataclass
class StreamReport(HasViolations):
    events: list[SSEEvent]  # every dispatched SSE event, in order
    violations: list[Violation]  # errors, warnings and notes, in the order found
    message: dict[str, Any] | None  # the accumulated final message (None if nothing started)
    complete: bool  # the stream reached its normal end (message_stop / [DONE])
    payloads: list[Any] = field(default_factory=list)  # parsed JSON data per event (None if unparsable)
    # Anthropic: pointer of a tool block's input (/content/N/input) -> its concatenated partial_json,
    # when that was not one JSON object (the block keeps `input: {}`; the tools checks judge the text)
    unparsed_tool_input: dict[str, str] = field(default_factory=dict)

    @property
    def check_ids(self) -> list[str]:
        return sorted({v.check_id for v in self.violations})


_SCHEMA_FOLDERS: list[Path] = sorted(Path(__file__).resolve().parent.glob("*/schemas"))


def add_schema_folder(folder: Path | str) -> None:
    """Let the schemas of a wire defined elsewhere be found by name."""
    folder = Path(folder).resolve()
    if folder not in _SCHEMA_FOLDERS:
        _SCHEMA_FOLDERS.append(folder)


def remove_schema_folder(folder: Path | str) -> None:
    """Forget a folder `add_schema_folder` added, and every schema compiled so far (a name may
    have been found there)."""
    folder = Path(folder).resolve()
    if folder in _SCHEMA_FOLDERS:
        _SCHEMA_FOLDERS.remove(folder)
        schema_validator.cache_clear()
        compiled_validator.cache_clear()


def schema_names() -> list[str]:
    """Every schema's name (its file name without `.json`), over all wire packages."""
    return sorted(p.stem for folder in _SCHEMA_FOLDERS for p in folder.glob("*.json"))


def schema_path(name: str) -> Path:
    """`<wire package>/schemas/<name>.json` (names are unique across wires: `anthropic.*`, ...)."""
    for folder in _SCHEMA_FOLDERS:
        path = folder / f"{name}.json"
        if path.is_file():
            return path
    raise FileNotFoundError(f"no schema named {name!r} in {', '.join(str(f) for f in _SCHEMA_FOLDERS)}")


@cache
def schema_validator(name: str):
    """The compiled validator of the schema `name` (compiled once per process)."""
    schema = json.loads(schema_path(name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def pointer(path) -> str:
    """RFC 6901 JSON pointer of a jsonschema path."""
    out = []
    for part in path:
        out.append(str(part).replace("~", "~0").replace("/", "~1"))
    return "/" + "/".join(out) if out else ""


# Fast validity. jsonschema costs ~0.3 ms per event, more than everything else together, and
# nearly every event of a real stream is valid. So each schema is also compiled, once, into a
# plain Python predicate (`compiled_validator`): straight-line code for the keywords our schemas
# use (COMPILABLE_KEYWORDS; const/enum of strings and null). It answers exactly what jsonschema
# answers for values made of JSON types (what the decoders produce) and is conservative beyond
# them (any other type answers False). True means valid, nothing more to do; False means the
# instance goes through the full jsonschema validator, which alone words the errors. So the
# schema files stay the one contract: the predicates are generated from them, never kept by hand.
# tests/wire/test_wire_schemas.py checks predicate == jsonschema on fixtures, mutants and
# arbitrary JSON.
COMPILABLE_KEYWORDS = frozenset({"$schema", "$id", "title", "description", "type", "properties", "required",
                                 "items", "const", "enum", "minLength", "minimum", "maxItems", "minItems",
                                 "allOf", "if", "then"})


class _Uncompilable(Exception):
    pass


_TYPE_TESTS = {
    "object": "isinstance({x}, dict)",
    "array": "isinstance({x}, list)",
    "string": "isinstance({x}, str)",
    "null": "{x} is None",
    "boolean": "({x} is True or {x} is False)",
    "integer": "(type({x}) is int or (type({x}) is float and {x}.is_integer()))",
    "number": "type({x}) in _NUM",
}


class _SchemaCompiler:
    """Turns one schema into the source of `def _valid(v0) -> bool` (raises _Uncompilable)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.n = 0

    def _var(self) -> str:
        self.n += 1
        return f"v{self.n}"

    @staticmethod
    def _eq(x: str, value: Any) -> str:
        if value is None:
            return f"{x} is None"
        if isinstance(value, str):  # jsonschema's equal(): with a string on either side it is ==
            return f"{x} == {value!r}"
        raise _Uncompilable(f"const/enum value {value!r}")

    def emit(self, node: Any, x: str, ind: int, out: list[str], known: str | None = None) -> None:
        """Lines that `return False` when `x` breaks `node`; `known`: x's JSON type, if checked already."""
        pad = " " * ind
        if node is True or node == {}:
            return
        if not isinstance(node, dict) or not set(node) <= COMPILABLE_KEYWORDS:
            raise _Uncompilable(str(node)[:80])
        if "type" in node:
            types = [node["type"]] if isinstance(node["type"], str) else list(node["type"])
            if not all(t in _TYPE_TESTS for t in types):
                raise _Uncompilable(f"type {types}")
            if known is None or types != [known]:
                out.append(f"{pad}if not ({' or '.join(_TYPE_TESTS[t].format(x=x) for t in types)}): return False")
            if len(types) == 1:
                known = types[0]
        if "const" in node:
            out.append(f"{pad}if not ({self._eq(x, node['const'])}): return False")
        if "enum" in node:
            out.append(f"{pad}if not ({' or '.join(self._eq(x, v) for v in node['enum']) or 'False'}): return False")
        if "minLength" in node:
            guard = "" if known == "string" else f"isinstance({x}, str) and "
            out.append(f"{pad}if {guard}len({x}) < {int(node['minLength'])}: return False")
        if "minimum" in node:
            m = node["minimum"]
            if type(m) not in (int, float):
                raise _Uncompilable(f"minimum {m!r}")
            if known in ("integer", "number"):  # int or float, never bool (the type test said so)
                out.append(f"{pad}if {x} < {m!r}: return False")
            else:
                out.append(f"{pad}if type({x}) in _NUM:")
                out.append(f"{pad} if {x} < {m!r}: return False")
                out.append(f"{pad}elif not isinstance({x}, _NOT_NUMBERS): return False")
        for kw, op in (("maxItems", ">"), ("minItems", "<")):
            if kw in node:
                guard = "" if known == "array" else f"isinstance({x}, list) and "
                out.append(f"{pad}if {guard}len({x}) {op} {int(node[kw])}: return False")
        if "required" in node or "properties" in node:
            inner = ind
            if known != "object":
                out.append(f"{pad}if isinstance({x}, dict):")
                out.append(f"{pad} pass")
                inner = ind + 1
            ipad = " " * inner
            required = list(node.get("required", ()))
            props = node.get("properties", {})
            for key in required:
                if key not in props:
                    out.append(f"{ipad}if {key!r} not in {x}: return False")
            for key, sub in props.items():
                body: list[str] = []
                v = self._var()
                if key in required:  # present for sure: check it at this level
                    self.emit(sub, v, inner, body)
                    out.append(f"{ipad}{v} = {x}.get({key!r}, _MISSING)")
                    if not self._rejects_missing(sub):
                        out.append(f"{ipad}if {v} is _MISSING: return False")
                    out.extend(body)
                    continue
                self.emit(sub, v, inner + 1, body)
                if body:
                    out.append(f"{ipad}{v} = {x}.get({key!r}, _MISSING)")
                    out.append(f"{ipad}if {v} is not _MISSING:")
                    out.extend(body)
        if "items" in node:
            body = []
            v = self._var()
            if known == "array":  # the type test above returned False for anything else
                self.emit(node["items"], v, ind + 1, body)
                if body:
                    out.append(f"{pad}for {v} in {x}:")
                    out.extend(body)
            else:
                self.emit(node["items"], v, ind + 2, body)
                if body:
                    out.append(f"{pad}if isinstance({x}, list):")
                    out.append(f"{pad} for {v} in {x}:")
                    out.extend(body)
        for sub in node.get("allOf", ()):
            self.emit(sub, x, ind, out, known)
        if "if" in node and "then" in node:
            body = []
            self.emit(node["then"], x, ind + 1, body, known)
            if body:
                out.append(f"{pad}if {self._if_test(node['if'], x, known)}:")
                out.extend(body)

    @staticmethod
    def _rejects_missing(node: Any) -> bool:
        """Whether the first line `emit` writes for `node` returns False for the _MISSING marker
        (an object of no JSON type), so a required property needs no test of its own that it is
        there: a type test (emitted first, `known` being None for a property) fails on it; with
        no type, a const or enum test (emitted next, comparing with strings and None) does."""
        return isinstance(node, dict) and ("type" in node or "const" in node or "enum" in node)

    def _if_test(self, node: Any, x: str, known: str | None) -> str:
        """An `if` must be decided exactly (a wrong False skips `then`). The common form, one
        property's string const, inline; anything else as its own predicate."""
        props = node.get("properties") if isinstance(node, dict) and set(node) == {"properties"} else None
        if isinstance(props, dict) and len(props) == 1:
            (key, sub), = props.items()
            if isinstance(sub, dict) and set(sub) == {"const"} and isinstance(sub["const"], str):
                guard = "" if known == "object" else f"not isinstance({x}, dict) or "
                return f"({guard}{key!r} not in {x} or {x}[{key!r}] == {sub['const']!r})"
        return f"{self.function(node)}({x})"

    def function(self, node: Any) -> str:
        """A named predicate for `node` (the main schema, or an `if` subschema)."""
        name = f"_p{len(self.helpers)}"
        self.helpers.append("")  # reserve the slot: nested `if`s get later numbers
        body: list[str] = []
        self.emit(node, "v0", 1, body)
        self.helpers[int(name[2:])] = "\n".join([f"def {name}(v0):", *body, " return True"])
        return name


@cache
def compiled_validator(name: str):
    """The schema `name` as a fast predicate (None if it uses other keywords)."""
    schema = json.loads(schema_path(name).read_text(encoding="utf-8"))
    comp = _SchemaCompiler()
    try:
        main = comp.function(schema)
    except _Uncompilable:
        return None
    namespace: dict[str, Any] = {"_MISSING": object(), "_NUM": (int, float),
                                 "_NOT_NUMBERS": (str, list, dict, bool, type(None))}
    exec(compile("\n\n".join(comp.helpers), f"<schema {name}>", "exec"), namespace)  # noqa: S102 - our own schema
    return namespace[main]


def schema_problems(name: str, instance: Any, *, memo: bool = True) -> list[tuple[str, str, str, str]]:
    """Schema errors as (pointer, message, expected, seen); a missing property points at itself.

    memo=False skips the compiled predicate (the full validator only; the tests compare both)."""
    if memo:
        fast = compiled_validator(name)
        if fast is not None and fast(instance):
            return []
    validator = schema_validator(name)
    out: list[tuple[str, str, str, str]] = []
    for err in validator.iter_errors(instance):
        for leaf in _leaves(err):
            base = pointer(leaf.absolute_path)
            if leaf.validator == "required" and isinstance(leaf.instance, dict):
                # jsonschema yields one error per missing property; name the one this error is about
                for prop in leaf.validator_value:
                    if prop not in leaf.instance and leaf.message.startswith(repr(prop)):
                        out.append((f"{base}/{prop}", f"required field {prop!r} is missing",
                                    f"{prop!r} present", f"keys {sorted(leaf.instance)}"))
            else:
                seen = json.dumps(leaf.instance, ensure_ascii=False)
                out.append((base, leaf.message if len(leaf.message) < 300 else leaf.message[:300] + "…",
                            _expected(leaf), seen if len(seen) < 200 else seen[:200] + "…"))
    return out


def _leaves(err):
    """The most specific errors under an anyOf/oneOf error (jsonschema nests them in context)."""
    if err.context:
        for sub in err.context:
            yield from _leaves(sub)
    else:
        yield err


def _expected(err) -> str:
    v, val = err.validator, err.validator_value
    if v == "const":
        return json.dumps(val)
    if v == "enum":
        return "one of " + ", ".join(json.dumps(x) for x in val)
    if v == "type":
        return f"type {val}"
    if v == "maxItems" and val == 0:
        return "an empty array"
    return f"{v}: {json.dumps(val)[:120]}"


def check_for_pointer(table: list[tuple[str, str, str]], kind: str, ptr: str, default: str) -> str:
    """First (kind, pointer prefix, check id) row of `table` matching; `default` otherwise.

    Array positions in the pointer match `*` in a prefix: /choices/0/delta matches /choices/*/delta.
    """
    ptr = _ARRAY_POS.sub("/*", ptr)
    for k, prefix, check_id in table:
        if (k == kind or k == "*") and (ptr == prefix or ptr.startswith(prefix + "/") or prefix == ""):
            return check_id
    return default


_ARRAY_POS = re.compile(r"/\d+(?=/|$)")


# The one bounded parser (conformance/core/bounded_json.py): msgspec first, json.loads for what
# msgspec refuses, so values and error wording are json.loads's; past the depth or size bound a
# ValueError whose reason `is_bound_reason`, reported as JSON_DEPTH by `json_check`.
# For hot loops: raises ValueError on anything it refuses; the caller then asks load_json for
# the reason.
fast_json = parse_json

JSON_DEPTH = register(
    "suite.limits.json_depth",
    "no JSON a target sends nests deeper, or is larger, than the suite parses",
    description=(f"Every JSON document from a target (event data, a body, tool arguments) is parsed with a "
                 f"bound: {MAX_DEPTH} levels of arrays and objects, {MAX_BYTES // 2**20} MiB. Past it the "
                 "document is this violation, not a parse: 3 KB of brackets nested 1,500 deep make "
                 "every standard parser raise RecursionError."),
    likely_cause="a target that echoes or generates pathological JSON (a runaway model emitting brackets, "
                 "a hostile server)",
    scope="wire",
    judges="stack",
).id


def json_check(reason: str | None, check_id: str) -> str:
    """The check a JSON parse failure with `reason` fails: JSON_DEPTH past the bound, else `check_id`."""
    return JSON_DEPTH if is_bound_reason(reason) else check_id


def load_json(body: bytes | bytearray | str | dict) -> tuple[Any, str | None]:
    """(value, None) or (None, reason). A dict is passed through."""
    if isinstance(body, (dict, list)):  # a tuple: isinstance of a union type is slower
        return body, None
    try:
        return parse_json(body), None
    except (TypeError, ValueError) as exc:
        return None, str(exc)


class StreamMachineBase:
    """What every wire's stream state machine shares: fed SSE events one at a time (`feed`, the
    wire's), it walks its wire's tables — `TRANSITIONS` (state, event kind) -> state, `RULES`
    state -> (check id, the rule in words), `RECOVER` (state, event kind) -> where an illegal
    event leaves it — and `finish()` (the wire's) returns the StreamReport. Sans-IO."""

    TRANSITIONS: dict[tuple[str, str], str]
    RULES: dict[str, tuple[str, str]]
    RECOVER: dict[tuple[str, str], str]

    def __init__(self, request: dict | None, start: str) -> None:
        self.request = request or {}
        self.state = start
        self.violations: list[Violation] = []
        self.events: list[SSEEvent] = []
        self.payloads: list[Any] = []  # each event's parsed JSON data (None: it did not parse)

    def _make(self, check_id: str, message: str, ev: SSEEvent | None = None, kind: str | None = None,
              **kw) -> Violation:
        """A violation located at event `ev` (its number, byte offset and type: `kind`, else the
        SSE event name); without `ev`, a violation of the whole stream."""
        if ev is not None:
            kw.setdefault("event_index", ev.index)
            kw.setdefault("byte_offset", ev.offset)
            kw.setdefault("event_type", kind or ev.event)
        return violation(check_id, message, **kw)

    def _v(self, check_id: str, message: str, ev: SSEEvent | None = None, kind: str | None = None, **kw) -> None:
        self.violations.append(self._make(check_id, message, ev, kind, **kw))

    def _advance(self, kind: str, ev: SSEEvent, seen: str, *, shown: str, event_type: str | None) -> bool:
        """Move on an event of `kind` (`seen`: the event as a violation's `seen` names it, `shown`:
        as its message does). An event the state does not allow is reported under the state's
        rule and the machine goes where RECOVER says; False when it does not go anywhere (the
        event is then not applied: the state is kept)."""
        state = self.state
        nxt = self.TRANSITIONS.get((state, kind))
        if nxt is None:
            check_id, rule = self.RULES[state]
            self._v(check_id, f"event #{ev.index} {shown} is not allowed in state {state!r}: {rule}", ev, event_type,
                    expected=rule, seen=seen)
            nxt = self.RECOVER.get((state, kind))
            if nxt is None:
                return False
        self.state = nxt
        return True


def judge_stream(decoder: SSEDecoder, machine, chunks) -> StreamReport:
    """Run a wire's state machine over the events `decoder` finds in `chunks` (bytes, or the
    transport's [(t, bytes)]); the framing violations go first: they explain what follows."""
    decode, feed = decoder.feed, machine.feed
    for t, data in iter_chunks(chunks):
        for ev in decode(data, t):
            feed(ev)
    for ev in decoder.close():
        feed(ev)
    report = machine.finish()
    report.violations[:0] = decoder.violations
    return report


def body_preview(body) -> str:
    """The first 200 characters of a body (bytes or text), for a violation's `seen`."""
    if isinstance(body, bytes | bytearray):
        body = bytes(body[:200]).decode("utf-8", errors="replace")
    return str(body)[:200]


def answer_object(body, check_id: str, expected: str,
                  what: str = "the response body") -> tuple[dict | None, list[Violation]]:
    """A non-stream answer's body as a JSON object: (the object, []), or (None, [the violation
    under `check_id` saying `what` is not one; `expected` names what the wire answers])."""
    data, err = load_json(body)
    if err is not None or not isinstance(data, dict):
        return None, [violation(json_check(err, check_id), f"{what} is not a JSON object ({err or type(data).__name__})",
                                expected=expected, seen=body_preview(body))]
    return data, []


def schema_violations(schema: str, instance: Any, table: list[tuple[str, str, str]], kind: str,
                      default: str, prefix: str = "") -> list[Violation]:
    """Every problem of `instance` against the schema `schema`, each under the check id its
    pointer maps to in `table` for `kind` (`check_for_pointer`), else `default`; each message
    starts with `prefix`."""
    return [violation(check_for_pointer(table, kind, ptr, default), prefix + msg, expected=expected, seen=seen,
                      pointer=ptr)
            for ptr, msg, expected, seen in schema_problems(schema, instance)]


def error_envelope_problems(check_id: str, schema: str, status: int, body, shape: str,
                            *, error_status: bool = True) -> tuple[dict | None, list[Violation]]:
    """An error body checked against its wire's envelope schema: (the body as a dict or None,
    violations). `shape` is the envelope as the expectation names it; `error_status` also asks
    for a 4xx / 5xx status beside an error body."""
    data, out = answer_object(body, check_id, shape, what=f"HTTP {status} error body")
    if data is None:
        return None, out
    out += schema_violations(schema, data, [], "", check_id, prefix=f"HTTP {status} error body: ")
    if error_status and status < 400:
        out.append(violation(check_id, f"an error body with HTTP {status}", expected="a 4xx or 5xx status",
                             seen=f"HTTP {status}"))
    return data, out
