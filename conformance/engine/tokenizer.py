"""The engine's deterministic tokenizer: usage counts and the context limit are computed with it.

Rules (documented in docs/engine.md; a probe must read the target's counts, never estimate them):
- A token is one of: a run of at most 4 ASCII letters (a longer word is several tokens), a single
  digit, one non-ASCII character, or one punctuation/symbol character. Whitespace is free.
  It deliberately differs from the usual "characters / 4" estimate (digits and punctuation weigh
  much more, whitespace nothing).
- A request's prompt tokens = 3 + for each message 4 + the tokens of its text, tool-call names and
  JSON inputs, tool results and thinking; plus the system text; plus for each offered tool its
  name, description and compact JSON schema.
- Output tokens = tokens of the emitted thinking, text, tool names and compact JSON arguments.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z]{1,4}|[0-9]|[^\sA-Za-z0-9]")


def count(text: str) -> int:
    """Number of tokens in `text`."""
    if not text:
        return 0
    return sum(1 for _ in _TOKEN.finditer(text))


def truncate(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` holding at most `max_tokens` tokens (cut at a token end)."""
    if max_tokens <= 0:
        return ""
    n = 0
    for m in _TOKEN.finditer(text):
        n += 1
        if n == max_tokens:
            return text[: m.end()]
    return text


def drop_prefix(text: str, tokens: int) -> str:
    """`text` without its first `tokens` tokens (what a truncating engine keeps)."""
    if tokens <= 0:
        return text
    n = 0
    for m in _TOKEN.finditer(text):
        n += 1
        if n == tokens:
            return text[m.end():]
    return ""
