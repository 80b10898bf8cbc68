"""Redaction of captured traffic, applied in memory before anything is written to disk.

Rules:
- Secrets are replaced by `<redacted:KIND>`: the values of secret headers (x-api-key,
  authorization — keeping the scheme word, e.g. `Bearer <redacted:token>` — cookies, and any
  header whose name says key/token/secret/cookie), and key-like strings found anywhere in a
  header value, the request body, the query or the response bytes (`sk-...`, `Bearer ...`, cloud
  and forge token shapes, JWTs), plus exact strings the caller names (`extra_secrets`).
- Identifiers are replaced by consistent pseudonyms, so the requests of one session still group
  together: the same real value always maps to the same pseudonym within one `Redactor`, and
  once seen in one place it is replaced everywhere else it occurs (a session id in a header and
  in a path inside the system prompt). Where identifiers sit is the client profiles' data
  (`ClientProfile.identifiers`, every registered client's together: the client is not trusted to
  be known): headers whose value is an id (a window id `<uuid>:<n>` keeps its number), JSON
  headers and body objects whose id fields are pseudonymised (a nested JSON string the same way,
  re-serialised compactly in its own key order), body values, packed ids (Claude Code's
  `metadata.user_id`: a JSON string of ids, or `user_<hex>_account_<uuid>_session_<uuid>` in 1.x)
  and ids recognised anywhere in text (opencode's `ses_...`); plus any header whose name mentions
  session/user/device/account. Pseudonyms keep the shape of the value (a UUID stays a UUID, 64
  hex stays 64 hex, `ses_` + N chars stays so) and are numbered in order of first sight, so a
  recapture with the same client gets the same pseudonyms.
- The home folder, the working folders the requests name and the login name become stable
  placeholders everywhere (on by default, `local_folders`; `conformance.capture.folders`).
- An id with a prefix before a UUID (`qwen-code:<uuid>`) keeps its prefix and its UUID's shape.
- Vendor prose filler (optional, `prose_filler=True`, used for the committed corpus): system
  prompts (Responses `instructions` and developer/system input items too), mid-conversation
  system messages, `<system-reminder>` and other client-injected user
  text, tool descriptions and JSON Schema `description` strings are replaced by filler of the
  same UTF-8 byte length (letters and digits become filler letters, a non-ASCII character
  becomes as many ASCII letters as its UTF-8 bytes; whitespace and ASCII punctuation stay, so
  the compact JSON serialisation has exactly the original size). Kept verbatim: XML-like tags,
  `[task:...]` tags, `working directory:` / `working in the directory:` lines (the reference engine reads them), the
  `x-anthropic-billing-header:` line, the user's own prompt (`keep_texts`), tool results,
  assistant turns, field names, schemas, enums and headers. The prose a Responses answer echoes
  from its request (`instructions` and tool descriptions in `response.created` /
  `response.completed`) gets the same filler in the response bytes, and a response is redacted
  as a whole across its chunks (`conformance.capture.across_chunks`).
- Report copies (`redact_credentials`, used by conformance.report.artifacts for failure folders):
  what the suite itself sent carries the user's real key, so the value of every credential
  header (`conformance.net.client.CREDENTIAL_HEADERS`, the same names the replay drops from a
  capture) becomes `<redacted:bearer>` or `<redacted:api-key>`; names keep their case and every
  other header is kept as sent (the rest of the request came from an already redacted capture).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from conformance.capture.across_chunks import EchoedProse, redact_chunks
from conformance.capture.folders import LocalFolders, own_home, own_login
from conformance.clients.profile import Identifiers, all_identifiers
from conformance.net.client import CREDENTIAL_HEADERS

# Header names (lower-case) whose whole value is a secret.
SECRET_HEADERS = (
    "x-api-key",
    "api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-goog-api-key",
    "anthropic-admin-api-key",
)
# Words in a header name that make it secret / identifying even when not listed above.
_SECRET_NAME_WORDS = ("key", "token", "secret", "cookie", "password", "auth")
_IDENTIFIER_NAME_WORDS = ("session", "user-id", "device", "account", "affinity")
# Headers that match the words above but carry no secret or identity.
_HARMLESS_HEADERS = frozenset({"anthropic-dangerous-direct-browser-access"})

# Key-like strings anywhere in text. Each is (kind, pattern); the match is replaced whole.
SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("token", r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=\-]{8,}"),
    ("api-key", r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"),
    ("aws-key", r"\bAKIA[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google-key", r"\bAIza[0-9A-Za-z_\-]{30,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
)

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]{16,}$")
_PREFIX = re.compile(r"^[A-Za-z]+_")  # an id kind written before the id: `ses_`
_TEXT_PSEUDONYM = re.compile(r"^[A-Za-z]+_0")  # its pseudonym: the kind, then a zero-padded number
_LEGACY_USER_ID = re.compile(
    r"^user_(?P<device>[0-9a-fA-F]+)_account_(?P<account>[0-9a-fA-F-]*)_session_(?P<session>[0-9a-fA-F-]+)$"
)


@dataclass
class RedactionConfig:
    """What to redact. The defaults cover the registered clients' identifiers and the common key shapes."""

    secret_headers: tuple[str, ...] = SECRET_HEADERS
    identifiers: Identifiers = field(default_factory=all_identifiers)
    keep_headers: tuple[str, ...] = ()  # never touched (lower-case names)
    patterns: tuple[tuple[str, str], ...] = SECRET_PATTERNS
    extra_secrets: tuple[str, ...] = ()  # exact strings to redact wherever they occur
    pseudonymize: bool = True  # False: identifiers become `<redacted:id>` (no grouping)
    prose_filler: bool = False  # replace vendor prose by same-length filler (the corpus does)
    keep_texts: tuple[str, ...] = ()  # user texts containing one of these are the user's own
    local_folders: bool = True  # the home and working folders and the login name become placeholders
    home_folders: tuple[str, ...] = field(default_factory=lambda: (own_home(),))  # + a client's scratch HOME
    login: str = field(default_factory=own_login)


@dataclass
class Redactor:
    """Stateful redactor: one per capture session, so pseudonyms are consistent within it."""

    config: RedactionConfig = field(default_factory=RedactionConfig)
    _pseudonyms: dict[str, str] = field(default_factory=dict)
    _counters: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._compiled = [(kind, re.compile(p)) for kind, p in self.config.patterns]
        config = self.config
        self._folders = LocalFolders(config.home_folders, config.login) if config.local_folders else None
        self._echoed_prose = EchoedProse()

    # -- identifiers -----------------------------------------------------------------------
    def pseudonym(self, value: str, kind: str = "id") -> str:
        """The pseudonym of an identifier: stable for the same value, shaped like the value."""
        if not value:
            return value
        if value in self._pseudonyms:
            return self._pseudonyms[value]
        if not self.config.pseudonymize:
            fake = f"<redacted:{kind}>"
        else:
            if _UUID.match(value):
                shape = "uuid"
            elif _HEX.match(value):
                shape = f"hex{len(value)}"
            elif any(rx.fullmatch(value) for rx in self.config.identifiers.text):
                prefix = m.group(0) if (m := _PREFIX.match(value)) else ""
                shape = f"text:{prefix}{len(value)}"
            else:
                shape = kind
            n = self._counters[shape] = self._counters.get(shape, 0) + 1
            if shape == "uuid":
                fake = f"00000000-0000-4000-8000-{n:012d}"
            elif shape.startswith("hex"):
                fake = format(n, "x").rjust(len(value), "0")
            elif shape.startswith("text:"):
                fake = prefix + str(n).rjust(len(value) - len(prefix), "0")
            else:
                fake = f"{kind}-{n}"
        self._pseudonyms[value] = fake
        return fake

    def _packed(self, user_id: str) -> str:
        """Pseudonymise a packed id string (Claude Code's metadata.user_id), keeping its encoding
        (a JSON string of ids, or the 1.x `user_..._account_..._session_...`)."""
        try:
            parsed = json.loads(user_id)
        except (ValueError, TypeError):
            parsed = None
        if isinstance(parsed, dict):
            out = {}
            for k, v in parsed.items():
                out[k] = self.pseudonym(v, k.replace("_", "-")) if isinstance(v, str) and v else v
            return json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        m = _LEGACY_USER_ID.match(user_id)
        if m:
            parts = {k: (self.pseudonym(v, k) if v else v) for k, v in m.groupdict().items()}
            return f"user_{parts['device']}_account_{parts['account']}_session_{parts['session']}"
        return self.pseudonym(user_id, "user-id")

    # -- ids the profiles place ---------------------------------------------------------------
    def _id(self, value: str, kind: str = "id") -> str:
        """An id: a uuid, or a window id `<uuid>:<n>` whose number is kept."""
        head, sep, tail = value.rpartition(":")
        if sep and tail.isdigit() and _UUID.match(head):
            return f"{self.pseudonym(head, kind)}:{tail}"
        if sep and _UUID.match(tail) and head:  # `qwen-code:<uuid>`: the prefix names the client, not the user
            return f"{head}:{self.pseudonym(tail, kind)}"
        return self.pseudonym(value, kind)

    def _metadata(self, value: Any) -> Any:
        """A JSON header's object (a dict, or its compact JSON string) with its id fields pseudonymised."""
        ids = self.config.identifiers
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
            except ValueError:
                return self.redact_text(value)
            if not isinstance(parsed, dict):
                return self.redact_text(value)
            return json.dumps(self._metadata(parsed), ensure_ascii=False, separators=(",", ":"))
        if not isinstance(value, dict):
            return value
        out = {}
        for k, v in value.items():
            if k in ids.fields and isinstance(v, str) and v:
                out[k] = self._id(v)
            elif k in ids.json_headers and isinstance(v, str):
                out[k] = self._metadata(v)
            else:
                out[k] = v
        return out

    def _body_ids(self, body: dict) -> dict:
        """A body with its packed ids, id objects and id values pseudonymised (a changed copy)."""
        ids = self.config.identifiers
        for path in ids.packed:
            body = _replace_string(body, path.split("."), self._packed)
        body = dict(body)
        for key in ids.body_objects:
            if isinstance(body.get(key), dict):
                body[key] = self._metadata(body[key])
        for key in ids.body_values:
            if isinstance(body.get(key), str) and body[key]:
                body[key] = self._id(body[key])
        return body

    # -- text ------------------------------------------------------------------------------
    def redact_text(self, text: str) -> str:
        """Secrets and already-seen identifiers out of one string."""
        for secret in self.config.extra_secrets:
            if secret:
                text = text.replace(secret, "<redacted:secret>")
        for kind, rx in self._compiled:
            text = rx.sub(f"<redacted:{kind}>", text)
        for rx in self.config.identifiers.text:
            text = rx.sub(lambda m: self.pseudonym(m.group(0), "session"), text)
        for real, fake in self._pseudonyms.items():
            if len(real) >= 8 and real in text:  # short values would hit unrelated text
                text = text.replace(real, fake)
        if self._folders is not None:
            text = self._folders.replace(text)
        return self._echoed_prose.replace(text)

    def redact_bytes(self, data: bytes) -> bytes:
        """Bytes that may end inside a UTF-8 character (a network chunk): invalid bytes survive as is."""
        text = data.decode("utf-8", "surrogateescape")
        return self.redact_text(text).encode("utf-8", "surrogateescape")

    # -- headers ---------------------------------------------------------------------------
    def _header_kind(self, name: str) -> str | None:
        if name in self.config.keep_headers or name in _HARMLESS_HEADERS:
            return None
        if name in self.config.secret_headers:
            return "secret"
        if name in self.config.identifiers.headers:
            return "identifier"
        if any(w in name for w in _SECRET_NAME_WORDS):
            return "secret"
        if any(w in name for w in _IDENTIFIER_NAME_WORDS):
            return "identifier"
        return "plain"

    def collect_identifiers(self, headers: dict[str, str], body: Any) -> None:
        """Learn the identifiers of one request first, so they are replaced everywhere after."""
        for name, value in headers.items():
            lname = name.lower()
            if lname in self.config.identifiers.json_headers:
                self._metadata(value)
            elif self._header_kind(lname) == "identifier":
                self._id(value, _id_kind(lname))
        if isinstance(body, dict):
            self._body_ids(body)
        if self._folders is not None:
            self._folders.learn(body)

    def redact_headers(self, headers: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, value in headers.items():
            lname = name.lower()
            kind = self._header_kind(lname)
            if kind is not None and lname in self.config.identifiers.json_headers:
                out[lname] = self._metadata(value)
            elif kind is None:
                out[lname] = value
            elif kind == "secret":
                scheme = value.split(" ", 1)[0] if " " in value.strip() else ""
                if lname in ("authorization", "proxy-authorization") and scheme:
                    out[lname] = f"{scheme} <redacted:token>"
                elif "cookie" in lname:
                    out[lname] = "<redacted:cookie>"
                else:
                    out[lname] = "<redacted:api-key>" if "key" in lname else "<redacted:secret>"
            elif kind == "identifier":
                out[lname] = self._id(value, _id_kind(lname))
            else:
                out[lname] = self.redact_text(value)
        return out

    # -- JSON bodies -----------------------------------------------------------------------
    def redact_json(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.redact_text(obj)
        if isinstance(obj, list):
            return [self.redact_json(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self.redact_json(v) for k, v in obj.items()}
        return obj

    def redact_body(self, body: Any) -> Any:
        """A parsed request body: the ids the profiles place pseudonymised, secrets and ids out of every string."""
        if isinstance(body, dict):
            body = self._body_ids(body)
        body = self.redact_json(body)
        if self.config.prose_filler:
            filled = fill_prose(body, keep_texts=self.config.keep_texts)
            if isinstance(body, dict):
                for key in ("instructions", "tools"):
                    self._echoed_prose.learn(body.get(key), filled.get(key))
            body = filled
        return body

    def redact_chunks(self, chunks: list) -> list:
        """A response's chunks redacted as a whole (`conformance.capture.across_chunks`)."""
        return redact_chunks(chunks, self.redact_bytes, self._folders.replace if self._folders else None)


def looks_pseudonymous(value: str) -> bool:
    """Whether a value has the shape of a pseudonym this redactor writes (a uuid, a text id's
    `<prefix>_0...`, a `session-N`): the structural diff compares such values by presence only."""
    return value.startswith(("00000000-0000-4000-8000-", "session-")) or bool(_TEXT_PSEUDONYM.match(value))


def _id_kind(header: str) -> str:
    return "session" if "session" in header or "affinity" in header else "id"


def _replace_string(obj: Any, path: list[str], change) -> Any:
    """`obj` with the non-empty string at `path` (keys) changed, as a copy; unchanged when absent."""
    if not isinstance(obj, dict) or path[0] not in obj:
        return obj
    value = obj[path[0]]
    if len(path) > 1:
        new = _replace_string(value, path[1:], change)
    elif isinstance(value, str) and value:
        new = change(value)
    else:
        return obj
    return obj if new is value else {**obj, path[0]: new}


def redact_credentials(headers: dict[str, str]) -> dict[str, str]:
    """A copy of headers the suite sent, safe to write to reports/ (see module rules)."""
    out = {}
    for name, value in headers.items():
        if name.lower() in CREDENTIAL_HEADERS:
            kind = "bearer" if value.lower().startswith("bearer ") else "api-key"
            out[name] = f"<redacted:{kind}>"
        else:
            out[name] = value
    return out


# -- vendor prose filler ----------------------------------------------------------------------
_FILLER = "loremipsumdolorsitametconsecteturadipiscingelitseddoeiusmodtemporincididuntutlabore"
_PROTECTED = re.compile(
    r"<[A-Za-z/!][^<>\n]{0,80}>"  # XML-like tags (<system-reminder>, </env>)
    r"|\[task:[^\]\n]*\]"  # scenario tags
    r"|(?im:^.*working (?:in the )?directory:.*$)"  # the engine joins relative paths onto it
    r"|(?im:^x-anthropic-billing-header:.*$)"
)


def fill_text(text: str) -> str:
    """Same-byte-length filler: alnum -> filler letters, non-ASCII -> ASCII letters, rest kept."""
    out: list[str] = []
    pos = 0
    k = 0

    def fill(segment: str) -> None:
        nonlocal k
        for ch in segment:
            if ch.isascii():
                if ch.isalnum():
                    out.append(_FILLER[k % len(_FILLER)])
                    k += 1
                else:
                    out.append(ch)
            else:
                n = len(ch.encode("utf-8"))
                out.append("".join(_FILLER[(k + i) % len(_FILLER)] for i in range(n)))
                k += n

    for m in _PROTECTED.finditer(text):
        fill(text[pos : m.start()])
        out.append(m.group(0))
        pos = m.end()
    fill(text[pos:])
    return "".join(out)


def fill_schema(schema: Any) -> Any:
    """A JSON Schema with every `description` string filled; everything else unchanged."""
    if isinstance(schema, list):
        return [fill_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "description" and isinstance(v, str):
            out[k] = fill_text(v)
        else:
            out[k] = fill_schema(v)
    return out


_TEXT_PARTS = ("text", "input_text")  # Anthropic / chat text blocks, Responses input parts


def _unquoted(text: str) -> str:
    return text.replace("\\", "").replace('"', "")


def _fill_content(content: Any, *, user: bool, keep_texts: tuple[str, ...]) -> Any:
    def keep(text: str) -> bool:
        # opencode escapes inner quotes (`\\"`) when it wraps a prompt in quotes: compare without them
        return user and any(t and _unquoted(t) in _unquoted(text) for t in keep_texts)

    if isinstance(content, str):
        return content if keep(content) else fill_text(content)
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
                part = dict(part)
                if not keep(part["text"]):
                    part["text"] = fill_text(part["text"])
            out.append(part)  # tool_result, tool_use, images, thinking: kept
        return out
    return content


def fill_prose(body: Any, *, keep_texts: tuple[str, ...] = ()) -> Any:
    """Vendor prose of an Anthropic or OpenAI request body replaced by same-length filler.

    User text is the user's own when it contains one of `keep_texts` (the case prompt); other
    user text (reminders, a title generator's instruction) is client-injected prose.
    """
    if not isinstance(body, dict):
        return body
    body = dict(body)
    if "system" in body:
        body["system"] = _fill_content(body["system"], user=False, keep_texts=keep_texts)
    if isinstance(body.get("instructions"), str):  # Responses
        body["instructions"] = fill_text(body["instructions"])
    if isinstance(body.get("tools"), list):
        body["tools"] = _fill_tools(body["tools"])
    for key in ("messages", "input"):  # chat / Anthropic messages, Responses input items
        items = body.get(key)
        if not isinstance(items, list):
            continue
        new_items = []
        for msg in items:
            if (isinstance(msg, dict) and msg.get("type", "message") == "message"
                    and msg.get("role") in ("system", "developer", "user") and "content" in msg):
                msg = dict(msg)
                msg["content"] = _fill_content(msg["content"], user=msg["role"] == "user", keep_texts=keep_texts)
            new_items.append(msg)  # tool results, calls, reasoning and assistant turns: kept
        body[key] = new_items
    return body


def _fill_tools(tools: list) -> list:
    """Tool descriptions and schema descriptions filled (Anthropic, chat, Responses tools; the tools
    inside a Responses `namespace` the same way). Names, schemas and custom-tool grammars kept."""
    new_tools = []
    for tool in tools:
        if isinstance(tool, dict):
            tool = dict(tool)
            if isinstance(tool.get("description"), str):
                tool["description"] = fill_text(tool["description"])
            for key in ("input_schema", "parameters"):
                if key in tool:
                    tool[key] = fill_schema(tool[key])
            if isinstance(tool.get("tools"), list):
                tool["tools"] = _fill_tools(tool["tools"])
            fn = tool.get("function")
            if isinstance(fn, dict):
                fn = dict(fn)
                if isinstance(fn.get("description"), str):
                    fn["description"] = fill_text(fn["description"])
                if "parameters" in fn:
                    fn["parameters"] = fill_schema(fn["parameters"])
                tool["function"] = fn
        new_tools.append(tool)
    return new_tools
