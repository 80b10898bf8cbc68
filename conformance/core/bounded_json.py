"""The one parser of JSON that came from outside the suite: bounded in depth and size.

Rules:
- Every parse of bytes a target sent (a stream event's data, a non-stream body, tool arguments,
  a capture a stranger attached) goes through `parse` or `parse_or_reason`. JSON nested
  1,500 levels deep is 3 KB, and the standard parsers raise RecursionError on it; here it is
  a `JsonBoundExceeded`, which the judges report as `suite.limits.json_depth`.
- `JsonBoundExceeded` is a ValueError, so code that already treats malformed JSON as a verdict
  (`except ValueError`) treats a document past the bound the same way, never as a crash.
- The bounds: MAX_DEPTH levels of arrays and objects (no request or answer of any client nests
  anywhere near it; the code that walks a parsed value, schema validation included, stays far
  from Python's recursion limit under it) and MAX_BYTES bytes (above the transport's caps, so
  only a file can reach it).
- Values are json.loads's: msgspec decodes first (about 5x faster) and whatever it refuses (NaN,
  Infinity, 1e400, lone surrogate escapes, every real error) goes to json.loads, which then
  decides and words the error.
- The depth is measured only when the text holds more than MAX_DEPTH opening brackets (counted by
  `bytes.count`, in C): a document with fewer cannot nest deeper. The measure skips strings.
- `copy_value` deep-copies a parsed value (what a judge keeps and then changes) as copy.deepcopy
  does, a few times faster: a parsed value is a tree of dicts and lists with immutable leaves and
  no shared parts; anything else is handed to copy.deepcopy.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from msgspec import DecodeError as _FastDecodeError
from msgspec.json import Decoder as _FastDecoder

MAX_DEPTH = 128
MAX_BYTES = 256 * 1024 * 1024

# What every reason for a document past the bound starts with (`is_bound_reason`).
BOUND_PREFIX = "JSON past the suite's bound: "

_fast_decode = _FastDecoder().decode

# a string token (skipped) or one bracket
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_OPEN = frozenset(b"[{")
_SHORT = 2 * MAX_DEPTH + 2


class JsonBoundExceeded(ValueError):
    """A document nested deeper than MAX_DEPTH or larger than MAX_BYTES."""


def deeper_than(data: bytes | bytearray | str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `data` nests arrays and objects more than `limit` levels deep."""
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return False
        data = data.encode("utf-8", "surrogatepass")
    elif data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for token in _TOKEN.finditer(data):
        first = token.group()[0]
        if first in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif first != 0x22:  # a closing bracket; a string token starts with '"'
            depth -= 1
    return False


def bound_problem(data: bytes | bytearray | str) -> str | None:
    """Why `data` is past the bound (the reason starts with BOUND_PREFIX), or None."""
    if len(data) > MAX_BYTES:
        return f"{BOUND_PREFIX}{len(data):,} bytes, more than the {MAX_BYTES:,} the suite parses"
    if deeper_than(data):
        return f"{BOUND_PREFIX}arrays and objects nested deeper than {MAX_DEPTH} levels"
    return None


def is_bound_reason(reason: object) -> bool:
    """Whether a parse failure's reason (`parse_or_reason`) is the bound, not malformed JSON."""
    return isinstance(reason, str) and BOUND_PREFIX in reason


def parse(data: bytes | bytearray | str) -> Any:
    """The JSON value of `data`. Raises JsonBoundExceeded past the bound, ValueError (json's
    JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8) when it is not JSON."""
    # The cheap tests inline (this runs once per stream event). A text shorter than _SHORT cannot
    # hold a document deeper than MAX_DEPTH (each level opens and closes), and what it holds
    # unclosed is too shallow to make a parser recurse far: its error is the parser's own. Only a
    # text with more opening brackets than MAX_DEPTH, or longer than MAX_BYTES, is measured.
    size = len(data)
    if size < _SHORT:
        brackets = 0
    elif isinstance(data, str):
        brackets = data.count("[") + data.count("{")
    else:
        brackets = data.count(b"[") + data.count(b"{")
    if brackets > MAX_DEPTH or size > MAX_BYTES:
        problem = bound_problem(data)
        if problem is not None:
            raise JsonBoundExceeded(problem)
    try:
        return _fast_decode(data)
    except (_FastDecodeError, TypeError, ValueError):
        pass
    except RecursionError:  # the stack was already deep: still a bound, not a crash
        raise JsonBoundExceeded(f"{BOUND_PREFIX}nesting too deep for the parser") from None
    try:
        return json.loads(data)
    except RecursionError:
        raise JsonBoundExceeded(f"{BOUND_PREFIX}nesting too deep for the parser") from None


def parse_or_reason(data: bytes | bytearray | str) -> tuple[Any, str | None]:
    """(value, None), or (None, why it is not JSON or is past the bound: `is_bound_reason`)."""
    try:
        return parse(data), None
    except ValueError as exc:  # JsonBoundExceeded, JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None, str(exc)


_ATOMIC = (str, int, float, bool, type(None))


def copy_value(value: Any) -> Any:
    """A deep copy of a parsed JSON value, equal to copy.deepcopy's (module rules)."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _ATOMIC else copy_value(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMIC else copy_value(v) for v in value]
    if kind in _ATOMIC:
        return value
    return copy.deepcopy(value)
