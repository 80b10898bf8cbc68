"""Deterministic ids and thinking signatures, derived from the request bytes.

Rules: the same request gives the same ids (a replay is byte-comparable apart from timestamps);
different requests give different ids. Signatures are opaque base64 the engine can recognise as
its own, shaped like Anthropic's (an open engine cannot mint real ones).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_KEY = b"conformance-reference-engine"


def digest(*parts) -> bytes:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\x00")
    return h.digest()


def base62(data: bytes, n: int) -> str:
    v = int.from_bytes(data, "big")
    out = []
    while len(out) < n:
        v, r = divmod(v, 62)
        out.append(_ALPHABET[r])
    return "".join(out)


def make(prefix: str, seed: bytes, *parts, n: int = 24) -> str:
    return prefix + base62(digest(seed, prefix, *parts), n)


def signature(thinking: str) -> str:
    mac = hmac.new(_KEY, thinking.encode(), hashlib.sha512).digest()
    return base64.b64encode(b"\x12\x08ref-eng" + mac).decode()
