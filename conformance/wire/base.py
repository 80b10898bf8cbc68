"""Protocol state machines (one file per wire) and what they share.

Rules:
- Each protocol module (`anthropic.py`, `openai.py`) exposes the same API: `check_stream(chunks, *,
  request=None) -> StreamReport`, `check_response(body, *, request=None) -> (message,
  violations)`, `check_error(status, body) -> violations` and `content_started(buf) -> bool`.
- Transitions are data (a table state x event -> state) in the protocol's own file; an illegal
  event yields a violation naming the event number, the event, the state and the rule.
- JSON Schemas (draft 2020-12) live in `conformance/wire/schemas/` and are compiled once, on first use.
  A schema error becomes a violation whose check id comes from the protocol's table (pointer
  prefix -> check id), so "stop_sequence missing" is reported as
  `anthropic.stream.stop_sequence_present`, not as a generic schema error.
- Nothing here raises on a target's bytes: bad input is a violation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from conformance.core.failures import HasViolations, Violation
from conformance.wire.sse import SSEEvent


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


@cache
def schema_validator(name: str):
    """The compiled validator of `conformance/wire/schemas/<name>.json` (compiled once per process)."""
    from jsonschema import Draft202012Validator

    from conformance.core.paths import schemas_dir

    schema = json.loads((schemas_dir() / f"{name}.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def pointer(path) -> str:
    """RFC 6901 JSON pointer of a jsonschema path."""
    out = []
    for part in path:
        out.append(str(part).replace("~", "~0").replace("/", "~1"))
    return "/" + "/".join(out) if out else ""


# Validity memo. jsonschema costs ~0.3 ms per event, more than everything else together, and a
# stream repeats a handful of event shapes thousands of times. For the keywords our schemas use
# (MEMO_SAFE_KEYWORDS; const/enum only on properties named in VALUE_KEYS) validity depends only
# on the *shape* of an instance: its keys, value types, integer signs, empty-vs-non-empty
# strings, array lengths and the values of VALUE_KEYS. So a shape validated clean once is clean
# again; invalid instances are always validated in full (their errors quote values).
# tests/wire/test_wire_schemas.py checks with mutated events that the memo never changes a verdict.
VALUE_KEYS = frozenset({"type", "role", "object", "stop_reason", "finish_reason"})
MEMO_SAFE_KEYWORDS = frozenset({"$schema", "$id", "title", "description", "type", "properties", "required",
                                "items", "const", "enum", "minLength", "minimum", "maxItems", "minItems",
                                "allOf", "if", "then"})
_VALID_SHAPES: set = set()
_MEMO_LIMIT = 100_000


@cache
def _memo_safe(name: str) -> bool:
    schema = json.loads((_schemas_dir() / f"{name}.json").read_text(encoding="utf-8"))

    def walk(node: Any, prop: str | None) -> bool:
        if not isinstance(node, dict):
            return True
        if not set(node) <= MEMO_SAFE_KEYWORDS:
            return False
        if ("const" in node or "enum" in node) and prop not in VALUE_KEYS:
            return False
        for key, sub in node.get("properties", {}).items():
            if not walk(sub, key):
                return False
        return all(walk(node[k], prop) for k in ("items", "if", "then") if k in node) and all(
            walk(sub, prop) for sub in node.get("allOf", []))

    return walk(schema, None)


def _shape(value: Any, key: str | None = None) -> Any:
    t = type(value)
    if t is str:
        return ("s", value) if key in VALUE_KEYS else ("s", bool(value))
    if t is dict:
        return tuple([(k, _shape(v, k)) for k, v in value.items()])
    if t is list:
        return ("L", tuple([_shape(v) for v in value]))
    if t is int:
        return ("i", value >= 0)
    if t is float:
        return ("f", value >= 0, value.is_integer())
    return (t.__name__, value if key in VALUE_KEYS else None)


def _schemas_dir():
    from conformance.core.paths import schemas_dir

    return schemas_dir()


def schema_problems(name: str, instance: Any, *, memo: bool = True) -> list[tuple[str, str, str, str]]:
    """Schema errors as (pointer, message, expected, seen); a missing property points at itself."""
    validator = schema_validator(name)
    shape_key = None
    if memo and _memo_safe(name):
        shape_key = (name, _shape(instance))
        if shape_key in _VALID_SHAPES:
            return []
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
    if not out and shape_key is not None and len(_VALID_SHAPES) < _MEMO_LIMIT:
        _VALID_SHAPES.add(shape_key)
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


def load_json(body: bytes | bytearray | str | dict) -> tuple[Any, str | None]:
    """(value, None) or (None, reason). A dict is passed through."""
    if isinstance(body, dict | list):
        return body, None
    try:
        return json.loads(body), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, str(exc)
