"""The registry of wires: which Dialects exist, by name and by request path.

Rules:
- A wire joins with one call, `register_dialect`, when its package is imported; `conformance.wire`
  imports the built-in packages, so any `conformance.wire.*` import sees them. A wire defined for
  a while (a test's toy) leaves with `unregister_dialect`.
- The one name -> wire map is `dialect` (names are what users type: `--conformance-api openai`,
  and what the results record stores); the one path -> wire map is `dialect_for_path`. Convert a
  name once, at the boundary, and pass the Dialect on.
"""

from __future__ import annotations

from conformance.core.named import add_named, remove_named
from conformance.wire.dialect import Dialect

DIALECTS: dict[str, Dialect] = {}


def register_dialect(d: Dialect) -> Dialect:
    """Add a wire (re-registering the same object is a no-op; another one under a taken name is refused)."""
    return add_named(DIALECTS, d, "a wire")


def unregister_dialect(d: Dialect) -> None:
    """Remove a wire registered with `register_dialect` (a wire defined for a while: a test's toy)."""
    remove_named(DIALECTS, d)


def dialect(name: str | Dialect) -> Dialect:
    """The Dialect of a wire name (what users type and the results record stores); a Dialect is
    returned as it is. An unknown name is refused with the known ones."""
    if isinstance(name, Dialect):
        return name
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown api {name!r}: expected one of {', '.join(repr(n) for n in DIALECTS)}") from None


def dialect_for_path(path: str) -> Dialect | None:
    """The wire of a request path: the Dialect whose generation or count_tokens endpoint the path
    ends with, under any mount prefix (/v1, /anthropic/v1, none) and ignoring a query; None for
    any other path (where two wires' endpoints match, the longer one wins). The one
    path -> wire map (captures, hops, the exchange judge)."""
    best: tuple[int, Dialect] | None = None
    for d in DIALECTS.values():
        n = d.endpoint_match(path)
        if n is not None and (best is None or n > best[0]):
            best = (n, d)
    return best[1] if best else None


def is_generation_path(path: str) -> bool:
    """Does `path` end with a wire's generation endpoint (not count_tokens, not anything else)?"""
    return any(d.is_generation(path) for d in DIALECTS.values())


def is_count_tokens_path(path: str) -> bool:
    """Does `path` end with a wire's count_tokens endpoint?"""
    return any(d.is_count_tokens(path) for d in DIALECTS.values())
