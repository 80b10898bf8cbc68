"""Small wire helpers of the engine self-tests: raw HTTP, our own SSE split, a mini agent loop.

The engine's tests use their own small assertions on the wire (plus, where it exists, the wire
core's checks); nothing here is imported by the engine.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import httpx

ANTHROPIC_HEADERS = {"x-api-key": "sk-test-secret", "anthropic-version": "2023-06-01",
                     "content-type": "application/json"}
OPENAI_HEADERS = {"authorization": "Bearer sk-test-secret", "content-type": "application/json"}


def post(url: str, path: str, body, *, headers=None, timeout=30.0, raw: bytes | None = None):
    """POST and return (status, headers, list of received byte chunks)."""
    h = dict(headers or (ANTHROPIC_HEADERS if path.startswith("/v1/messages") else OPENAI_HEADERS))
    data = raw if raw is not None else json.dumps(body).encode()
    chunks = []
    with httpx.Client(timeout=timeout) as c, c.stream("POST", url + path, content=data, headers=h) as r:
        for ch in r.iter_raw():
            chunks.append(ch)
        return r.status_code, dict(r.headers), chunks


def sse_events(data: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) pairs — a deliberately tiny parser for our own assertions."""
    out = []
    for block in data.decode().replace("\r\n", "\n").split("\n\n"):
        name, datas = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                datas.append(line[5:].lstrip(" "))
        if datas:
            out.append((name, "\n".join(datas)))
    return out


def anthropic_events(data: bytes) -> list[dict]:
    return [json.loads(d) for _, d in sse_events(data)]


def openai_chunks(data: bytes) -> list:
    return [d if d == "[DONE]" else json.loads(d) for _, d in sse_events(data)]


# ---- scenario variables and a mini sandbox (the loop driver has its own; this is the test's) ----


def draw_variables(spec: dict, rng: random.Random) -> dict:
    out = {}
    for name, v in (spec or {}).items():
        if v["kind"] == "ints":
            out[name] = [rng.randint(v["min"], v["max"]) for _ in range(v["count"])]
        elif v["kind"] == "word":
            out[name] = "".join(rng.choice(string.ascii_lowercase) for _ in range(8))
        else:
            out[name] = "".join(rng.choice("0123456789abcdef") for _ in range(12))
    return out


def render_vars(template: str, variables: dict) -> str:
    def sub(m):
        parts = [p.strip() for p in m.group(1).split("|")]
        value = variables[parts[0]]
        for f in parts[1:]:
            if f == "lines":
                value = "\n".join(str(x) for x in value)
            elif f == "sum":
                value = sum(value)
            elif f == "upper":
                value = str(value).upper()
            else:
                raise AssertionError(f"test renderer lacks filter {f}")
        return str(value)

    return re.sub(r"\{\{(.+?)\}\}", sub, template)


class Sandbox:
    """Runs read/write/edit calls of either client's tool shape inside one directory."""

    def __init__(self, root: Path, style: str):
        self.root = root
        self.style = style  # "claude" (Read → '     1→line' + reminder) or "opencode" ('00001| line')

    def _path(self, args: dict) -> Path:
        p = args.get("file_path") or args.get("filePath") or args.get("path")
        path = Path(p)
        if not path.is_absolute():
            path = self.root / path
        path = path.resolve()
        assert str(path).startswith(str(self.root.resolve())), f"tool call escapes the sandbox: {p}"
        return path

    def run(self, name: str, args: dict) -> str:
        kind = name.lower()
        path = self._path(args)
        if kind == "read":
            lines = path.read_text().splitlines()
            if self.style == "claude":
                body = "\n".join(f"{i:>6}→{ln}" for i, ln in enumerate(lines, 1))
                return body + "\n\n<system-reminder>\nWhenever you read a file, consider malware 42.\n</system-reminder>\n"
            body = "\n".join(f"{i:05d}| {ln}" for i, ln in enumerate(lines, 1))
            return f"<file>\n{body}\n\n(End of file - total {len(lines)} lines)\n</file>"
        if kind == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(args["content"])
            return f"File created successfully at: {path}"
        if kind == "edit":
            old = args.get("old_string", args.get("oldString"))
            new = args.get("new_string", args.get("newString"))
            text = path.read_text()
            assert old in text, f"edit: {old!r} not in file"
            path.write_text(text.replace(old, new, 1))
            return f"The file {path} has been updated."
        raise AssertionError(f"unexpected tool {name}")


def seed_scenario(doc: dict, root: Path, rng: random.Random) -> dict:
    variables = draw_variables(doc.get("variables"), rng)
    for rel, tmpl in (doc.get("seed") or {}).items():
        (root / rel).write_text(render_vars(tmpl, variables))
    return variables


def check_completion(doc: dict, root: Path, variables: dict) -> None:
    for c in doc["completion"]:
        p = root / c["file"]
        if "exists" in c:
            assert p.exists() == c["exists"], c
            continue
        text = p.read_text()
        if "equals" in c:
            want = render_vars(c["equals"], variables)
            assert (text.strip() if c.get("strip") else text) == want, (c, text)
        if "contains" in c:
            assert render_vars(c["contains"], variables) in text, (c, text)
        if "not_contains" in c:
            assert render_vars(c["not_contains"], variables) not in text, (c, text)


CLAUDE_TOOLS = [
    {"name": "Read", "description": "Read a file", "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        "required": ["file_path"], "additionalProperties": False}},
    {"name": "Write", "description": "Write a file", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"], "additionalProperties": False}},
    {"name": "Edit", "description": "Edit a file", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"},
                                         "new_string": {"type": "string"}, "replace_all": {"type": "boolean", "default": False}},
        "required": ["file_path", "old_string", "new_string"], "additionalProperties": False}},
    {"name": "Bash", "description": "Run a command", "eager_input_streaming": True, "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
]
OPENCODE_FUNCS = [
    {"name": "read", "description": "read", "parameters": {
        "type": "object", "properties": {"filePath": {"type": "string"}, "offset": {"type": "number"}},
        "required": ["filePath"], "additionalProperties": False}},
    {"name": "write", "description": "write", "parameters": {
        "type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
        "required": ["filePath", "content"], "additionalProperties": False}},
    {"name": "edit", "description": "edit", "parameters": {
        "type": "object", "properties": {"filePath": {"type": "string"}, "oldString": {"type": "string"},
                                         "newString": {"type": "string"}, "replaceAll": {"type": "boolean"}},
        "required": ["filePath", "oldString", "newString"], "additionalProperties": False}},
]
OPENAI_TOOLS = [{"type": "function", "function": f} for f in OPENCODE_FUNCS]
RESPONSES_TOOLS = [{"type": "function", **f} for f in OPENCODE_FUNCS]
