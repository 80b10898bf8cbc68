"""The one scrubber: the secrets this run knows never reach a byte the suite writes.

Rules:
- The suite knows its secrets exactly: the API key it sends (`--conformance-api-key`,
  `--api-key`), the userinfo of every URL it is given (`--target http://user:PASSWORD@host/`,
  the engine and metrics URLs, a capture proxy's upstream) and the values of the key
  environment variables (a name ending in KEY, TOKEN, SECRET or PASSWORD). `register` is called
  once per run (per process: pytest-xdist workers register their own) with those; the
  environment is read at that moment.
- `scrub_text`, `scrub_bytes`, `scrub_chunks` and `scrub_json` replace every occurrence of a
  known secret by a named placeholder `<redacted:NAME>` (`<redacted:api-key>`,
  `<redacted:target-password>`, `<redacted:env:ANTHROPIC_API_KEY>`), in the spellings a writer
  may give it: as is, JSON-escaped, HTML-escaped, percent-encoded, and (userinfo) as the
  base64 of an HTTP Basic credential. Whatever the registration, userinfo in any URL
  (`scheme://user:pass@`) becomes `scheme://<redacted:userinfo>@`.
- Values shorter than MIN_SECRET_LENGTH are not scrubbed by value: replacing `pw` everywhere would
  garble every report, and such a value is no secret worth the name; in a URL it is still cut.
  An environment variable's value counts from MIN_ENV_SECRET_LENGTH (its name alone chose it).
- Every writer of reports, failure folders, captures and console text calls these; a command's
  console is scrubbed whole (`scrubbed_console`, around every `conformance` command, whose key
  and URLs `register_command_line` registers); the
  placeholders hold no `:` before `@` and no secret, so scrubbing twice changes nothing.
- Strangers' secrets, known only by their name (what the capture proxy records): a JSON field or a
  `name=value` parameter named key, api_key, access_token, token, password, secret, ...
  (SECRET_NAMES) has its value replaced by `<redacted:NAME>` (`redact_named_fields`,
  `redact_named_params`).
- A secret cut short is found too: a report quotes the first N characters of a body and N may
  fall inside the key, so a secret of 16 characters or more is matched from its first third on
  (8 characters at least).
- A response arrives in chunks; a secret cut across two chunks is still found (`scrub_chunks`
  scrubs the joined bytes and gives each replacement to the chunk where the secret began).
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

MIN_SECRET_LENGTH = 4
# An environment variable is matched by its name only, so its value must look like a credential
# too: `HF_HUB_DISABLE_TOKEN=true` must not turn every "true" of a report into a placeholder.
MIN_ENV_SECRET_LENGTH = 8
# Environment variables whose value is a credential: ANTHROPIC_API_KEY, OPENAI_API_KEY,
# CONFORMANCE_API_KEY, ANTHROPIC_AUTH_TOKEN, GITHUB_TOKEN, a proxy's *_PASSWORD ...
KEY_ENV_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
# Named like a key but not one: the run token is shown in every report on purpose.
NOT_SECRET_ENV = frozenset({"CONFORMANCE_RUN_TOKEN"})
# userinfo in any URL: after `://`, anything up to `@` that holds no delimiter of a URL or of the
# text around it (so the placeholder itself, with its `<` and `>`, is never matched). The pattern
# opens with the literal `://`, which the regex engine looks for at C speed.
_USERINFO = re.compile(r"(://)([^/?#\s@\"'<>`]+)@")
_USERINFO_BYTES = re.compile(_USERINFO.pattern.encode())
USERINFO_PLACEHOLDER = "<redacted:userinfo>"


def placeholder(name: str) -> str:
    return f"<redacted:{name}>"


def spellings(value: str) -> set[str]:
    """The ways a writer may spell `value`: as is, inside a JSON string (both ASCII modes),
    HTML-escaped, percent-encoded."""
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
           html.escape(value), html.escape(value, quote=False), quote(value, safe=""), quote(value)}
    return {s for s in out if len(s) >= MIN_SECRET_LENGTH}


def url_secrets(name: str, url: str | None) -> dict[str, str]:
    """The secrets of a URL's userinfo, by placeholder name: the whole userinfo, the password,
    both percent-decoded too, and the Basic credential an HTTP client derives from them."""
    if not url or "@" not in url:
        return {}
    try:
        parts = urlsplit(url)
    except ValueError:
        return {}
    if "@" not in parts.netloc:
        return {}
    userinfo = parts.netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    found = {f"{name}-userinfo": userinfo, f"{name}-userinfo-decoded": unquote(userinfo)}
    if password:
        found[f"{name}-password"] = password
        found[f"{name}-password-decoded"] = unquote(password)
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        found[f"{name}-basic"] = base64.b64encode(basic).decode("ascii")
    return found


def env_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {f"env:{k}": v for k, v in sorted(environ.items())
            if KEY_ENV_NAME.search(k) and k not in NOT_SECRET_ENV and len(v) >= MIN_ENV_SECRET_LENGTH}


class Scrubber:
    """Replaces known secret values (name -> value) wherever they occur (module rules)."""

    def __init__(self, secrets: Mapping[str, str | None]) -> None:
        by_spelling: dict[str, str] = {}
        for name, value in secrets.items():
            if not value or len(value) < MIN_SECRET_LENGTH:
                continue
            for spelled in spellings(value):
                by_spelling.setdefault(spelled, placeholder(name.split("-decoded")[0]))
        self._names = by_spelling
        self._text = _Finder(list(by_spelling.items()))
        self._bytes = _Finder([(k.encode("utf-8"), v.encode("utf-8")) for k, v in by_spelling.items()])

    @property
    def known(self) -> int:
        return len(self._names)

    def text(self, text: str) -> str:
        text = self._text.replace(text)
        return _USERINFO.sub(lambda m: m.group(1) + USERINFO_PLACEHOLDER + "@", text)

    def bytes(self, data: bytes) -> bytes:
        data = self._bytes.replace(data)
        return _USERINFO_BYTES.sub(lambda m: m.group(1) + USERINFO_PLACEHOLDER.encode() + b"@", data)

    def chunks(self, chunks: Iterable[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
        """Chunks with every secret replaced, one cut across chunks included (module rules)."""
        chunks = list(chunks)
        joined = b"".join(d for _t, d in chunks)
        spans = self._spans(joined)
        if not spans:
            return chunks
        out: list[tuple[float, bytes]] = []
        pending = iter(spans)
        span = next(pending, None)
        start = 0
        for t, data in chunks:
            end = start + len(data)
            piece = bytearray()
            pos = start
            while pos < end:
                while span is not None and span[1] <= pos:
                    span = next(pending, None)
                if span is None or span[0] >= end:
                    piece += joined[pos:end]
                    pos = end
                elif span[0] > pos:
                    piece += joined[pos:span[0]]
                    pos = span[0]
                else:  # inside a secret: its placeholder goes where it began, the rest is dropped
                    if span[0] == pos:
                        piece += span[2]
                    pos = min(end, span[1])
            out.append((t, bytes(piece)))
            start = end
        return out

    def _spans(self, data: bytes) -> list[tuple[int, int, bytes]]:
        found = self._bytes.spans(data)
        found += [(m.start(), m.end(), m.group(1) + USERINFO_PLACEHOLDER.encode() + b"@")
                  for m in _USERINFO_BYTES.finditer(data)]
        found.sort()
        kept: list[tuple[int, int, bytes]] = []
        for span in found:  # overlapping finds: the first one wins
            if not kept or span[0] >= kept[-1][1]:
                kept.append(span)
        return kept

    def json(self, obj: Any) -> Any:
        """A JSON value with every string (and key) scrubbed, as a copy."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, list | tuple):
            return [self.json(x) for x in obj]
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.json(v) for k, v in obj.items()}
        return obj


# A secret this long is also found cut short (`_Finder`), from MIN_CUT_HEAD characters at least:
# fewer would replace coincidences (`sk-con` of `sk-conformance` in `sk-cons...`).
MIN_CUT_LENGTH = 16
MIN_CUT_HEAD = 8


def _head_length(length: int) -> int:
    """How much of a secret must be present for a cut copy of it to be found."""
    if length < MIN_CUT_LENGTH:
        return length
    return max(MIN_CUT_HEAD, length // 3)


class _Finder:
    """Finds secrets (spelling -> placeholder) in str or bytes, a secret cut short included: a
    report quotes the first N characters of a body, and N may fall inside the key. A spelling of
    MIN_CUT_LENGTH or more is found by its first third (`_head_length`); the match then runs as far
    as the text agrees with the secret."""

    def __init__(self, spelled: list) -> None:
        self._secrets = list(spelled)
        self._heads = [s[:_head_length(len(s))] for s, _p in self._secrets]

    def spans(self, data):
        """(start, end, placeholder) of every secret, left to right, none overlapping. Each head is
        looked for with `find` (a literal search in C: a regex alternation of the heads is a
        hundred times slower over a 64 MiB body)."""
        starts: set[int] = set()
        for head in set(self._heads):
            at = data.find(head)
            while at != -1:
                starts.add(at)
                at = data.find(head, at + 1)
        out = []
        pos = 0
        for start in sorted(starts):
            if start < pos:
                continue
            # one spelling's head may open another's text (`sk-"a"` and `sk-"a"&lt;`): of the
            # secrets whose head is here, the one the text agrees with furthest wins
            end, holder = max((self._agreement(data, start, i) for i in range(len(self._secrets))
                               if data.startswith(self._heads[i], start)), key=lambda found: found[0])
            out.append((start, end, holder))
            pos = end
        return out

    def _agreement(self, data, start: int, i: int):
        """(where the text stops agreeing with secret i, its placeholder), from `start`."""
        secret, holder = self._secrets[i]
        n = len(self._heads[i])
        while n < len(secret) and start + n < len(data) and data[start + n] == secret[n]:
            n += 1
        return start + n, holder

    def replace(self, data):
        spans = self.spans(data)
        if not spans:
            return data
        pieces, pos = [], 0
        for start, end, holder in spans:
            pieces += [data[pos:start], holder]
            pos = end
        pieces.append(data[pos:])
        return data[:0].join(pieces)


_lock = threading.Lock()
_active: Scrubber | None = None


def register(*, api_key: str | None = None, urls: Mapping[str, str | None] | None = None,
             extra: Mapping[str, str | None] | None = None) -> Scrubber:
    """The run's secrets (module rules): the key, the userinfo of each named URL, the key
    environment variables now, and any `extra` name -> value. Replaces the previous registration."""
    global _active
    secrets: dict[str, str | None] = {"api-key": api_key}
    for name, url in (urls or {}).items():
        secrets.update(url_secrets(name, url))
    secrets.update(env_secrets())
    secrets.update(extra or {})
    with _lock:
        _active = Scrubber(secrets)
        return _active


def active() -> Scrubber:
    """The registered scrubber; before any registration, the key environment variables'."""
    global _active
    with _lock:
        if _active is None:
            _active = Scrubber(env_secrets())
        return _active


def scrub_text(text: str) -> str:
    return active().text(text)


def scrub_bytes(data: bytes) -> bytes:
    return active().bytes(data)


def scrub_chunks(chunks: Iterable[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
    return active().chunks(chunks)


def scrub_json(obj: Any) -> Any:
    return active().json(obj)


# -- secrets known by their name: what the capture proxy records of strangers' traffic ----------
# A field or parameter with one of these names holds a credential whatever its value looks like
# (compared lower-case, `-` read as `_`).
SECRET_NAMES = frozenset({
    "key", "api_key", "apikey", "x_api_key", "access_token", "refresh_token", "id_token", "token",
    "auth_token", "password", "passwd", "secret", "client_secret", "authorization",
})
_NAMED_PARAM = re.compile(
    r"(?i)(?<![\w\-])(" + "|".join(sorted((n.replace("_", "[_-]") for n in SECRET_NAMES), key=len, reverse=True))
    + r")=([^&\s\"'<>;,]+)")


def _is_secret_name(name: str) -> bool:
    return name.lower().replace("-", "_") in SECRET_NAMES


def redact_named_params(text: str) -> str:
    """`token=VALUE`, `api_key=VALUE`, ... (a query string, a form body, a URL or a line of text)
    with the value replaced by `<redacted:NAME>`."""
    return _NAMED_PARAM.sub(lambda m: f"{m.group(1)}={placeholder(m.group(1).lower().replace('-', '_'))}", text)


def redact_named_params_bytes(data: bytes) -> bytes:
    text = data.decode("utf-8", "surrogateescape")
    return redact_named_params(text).encode("utf-8", "surrogateescape")


def redact_named_fields(obj: Any) -> Any:
    """A JSON value (a copy) whose string values under a secret name (SECRET_NAMES) are
    `<redacted:NAME>`, at any depth. Other strings are kept: conversation text saying
    `key=value` is the user's, not a credential sent to the upstream."""
    if isinstance(obj, dict):
        return {k: (placeholder(k.lower().replace("-", "_")) if isinstance(v, str) and v and _is_secret_name(k)
                    else redact_named_fields(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_named_fields(x) for x in obj]
    return obj


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without userinfo, user, password), both percent-decoded; None when absent."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    return (parts._replace(netloc=host).geturl(), unquote(user), unquote(password) if sep else None)


def without_userinfo(url: str | None) -> str | None:
    return split_userinfo(url)[0] if url else url


class ScrubbingStream:
    """A text stream (the console) whose every write passes through the active scrubber; every
    other attribute is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def scrubbed_console() -> Iterator[None]:
    """sys.stdout and sys.stderr through the scrubber for the duration (a command's console)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(sys.stdout), ScrubbingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def register_command_line(args: Any) -> Scrubber:
    """The secrets of a parsed command line: its `api_key` and the userinfo of every URL it holds."""
    values = vars(args)
    urls = {name.replace("_", "-"): v for name, v in values.items() if isinstance(v, str) and "://" in v}
    return register(api_key=values.get("api_key"), urls=urls)
