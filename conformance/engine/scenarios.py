"""Scenario player: recognise a scripted task in a conversation and build the next assistant turn.

Rules (docs/contracts/scenarios.md; this is the engine's own loader, sharing no code with the
loop driver):
- The trigger is searched (case-insensitive) only in user-authored text: the text of `user`
  messages, never system text and never tool results. The *last* user message that matches is
  the triggering one; turn k is played when k-1 assistant messages follow it.
- An abstract tool kind maps to an offered tool by name (case-insensitive), else by the shape of
  its schema (`shapes`), so a client that names its tools its own way (`read_files`,
  `run_commands`, `editor`) is still played: a command property (not an enum) is a shell, a path
  with old and new text edits, a path with content writes, a path alone (no pattern or query)
  reads; an editor whose `command` enum holds `view` / `create` / `str_replace` does all three
  through that mode. A tool whose name says it is for something else (`view_image`,
  `list_dir`, `web_fetch`: NOT_A_FILE_TOOL) is never matched by shape. The abstract arguments map to the schema's own property names
  (`ARG_NAMES`, case-insensitive: `filepath`, `absolute_path`, `file_text`, ...), a string
  wrapped in a list for an array property; other required properties are filled from the schema
  (default, first enum value, else a value of the declared type).
- Relative paths are joined onto the working directory the client names: in the system text
  (`Working directory: /x`), else in a user text (`I'm currently working in the directory: /x`);
  without one they stay relative.
- Templates are evaluated over tool results only (never over the driver's variables). Tool result
  text is cleaned first: `<system-reminder>` blocks, file wrappers (`<file>`, `<content>`,
  `<path>`, `<type>`), "(End of file ...)" notes, the header of Codex's command output (`Chunk ID:`,
  `Wall time:`, `Process exited with code N`, ... up to `Output:`) and line-number prefixes
  (`   1→`, `1\t`, `00001| `, `1: `) are removed, so filters see the file's own text.
- A client without a file tool of the kind (Codex offers `exec_command` and `apply_patch` only) gets
  the step through what it does offer: `write` and `edit` become one `apply_patch` call (Codex's
  patch format, `*** Begin Patch` ... `*** End Patch`; the raw text for a freeform custom tool,
  `{"input": patch}` for a function tool), and `read`, `list`, `glob`, `grep` (and `write` when no
  patch tool is offered) become one shell command (`cat`, `ls`, `printf`, `grep`) of the shell tool.
- If a turn's tool kind is not offered in any of these ways (e.g. opencode's title request has no
  tools) the turn cannot be played: `plan()` returns None and the engine answers with plain text.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from conformance.core.paths import fixtures_dir
from conformance.engine.conversation import Conversation, Message, Tool

TOOL_NAMES = {
    "read": ("read", "read_file", "view"),
    "write": ("write", "write_file", "create_file"),
    "edit": ("edit", "edit_file", "str_replace"),
    "bash": ("bash", "shell", "run_command", "exec_command"),
    "list": ("list", "ls", "list_dir"),
    "glob": ("glob",),
    "grep": ("grep", "search"),
}
ARG_NAMES = {
    "path": ("file_path", "filePath", "path", "filepath", "absolute_path", "target_file", "file", "filename"),
    "content": ("content", "contents", "file_text", "text", "data"),
    "old": ("old_string", "oldString", "old_str", "old_text", "old"),
    "new": ("new_string", "newString", "new_str", "new_text", "new"),
    "command": ("command", "cmd", "commands", "script"),
    "pattern": ("pattern",),
}
SEARCH_ARGS = ("pattern", "query", "regex")  # a path tool with one of these searches: it is not a read
# a tool named for something other than a text file is never matched by shape (Codex's
# `view_image {path}` is not how it reads token.txt: its shell is)
NOT_A_FILE_TOOL = ("image", "url", "web", "fetch", "dir", "list", "agent", "notebook")
EDITOR_MODES = {"read": "view", "write": "create", "edit": "str_replace"}  # an editor's `command` enum
PATH_ARGS = ("path",)
PATCH_TOOLS = ("apply_patch",)
PATCH_BEGIN, PATCH_END = "*** Begin Patch", "*** End Patch"

_WORKDIR = re.compile(r"working directory:\s*(\S+)", re.I)
_WORKDIR_IN_USER_TEXT = re.compile(r"I'm currently working in the directory:\s*(/[^\s\"<>]+)")
_TEMPLATE = re.compile(r"\{\{\s*([^}|]+?)\s*((?:\|\s*[a-z_]+\s*)*)\}\}")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_WRAPPER_LINE = re.compile(r"^\s*(</?(file|content)>|<path>.*</path>|<type>.*</type>)\s*$")
_NOTE_LINE = re.compile(r"^\s*\((End of file|File has more lines|Output truncated)[^)]*\)\s*$", re.I)
_LINE_PREFIX = re.compile(r"^\s*\d+(?:→|\t|\| ?|: )")
# Codex's exec_command / apply_patch output starts with `Key: value` lines and `Output:`.
_EXEC_HEADER = re.compile(r"\A(?:(?:Chunk ID|Wall time|Process exited with code|Exit code|Original token count|"
                          r"Process running with session ID)[^\n]*\n)+Output:\n")


class EngineScenarioError(ValueError):
    """A scenario file the reference engine cannot load or play (bad JSON, not a scenario, no
    trigger or script, an unknown template filter). Not the loop driver's `LoopScenarioError`."""


@dataclass(frozen=True)
class Scenario:
    id: str
    trigger: re.Pattern
    script: tuple
    path: str


def load_dir(folder) -> list[Scenario]:
    """Load every scenario file of `folder` (skipping the schema); raise EngineScenarioError on a bad one."""
    out = []
    for p in sorted(Path(folder).glob("*.json")):
        if p.name.endswith(".schema.json"):
            continue
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise EngineScenarioError(f"{p}: not readable JSON ({e}); fix the file or point --scenarios elsewhere") from e
        if not isinstance(doc, dict) or doc.get("format") != "conformance.scenario":
            raise EngineScenarioError(f"{p}: not a conformance.scenario file (format field)")
        try:
            trig = re.compile(doc["trigger"], re.I)
            script = tuple(doc["script"])
            sid = doc["id"]
        except (KeyError, TypeError, re.error) as e:
            raise EngineScenarioError(f"{p}: bad scenario ({e!r}); it needs id, trigger (a regex) and script") from e
        if not script or not all(isinstance(t, dict) and ("text" in t or "tool_calls" in t) for t in script):
            raise EngineScenarioError(f"{p}: every script turn needs `text` or `tool_calls`")
        out.append(Scenario(sid, trig, script, str(p)))
    return out


def default_dir() -> Path:
    # The engine resolves the bundled fixtures itself (conformance.core.paths holds no judge code).
    return fixtures_dir() / "scenarios"


# ---- matching -------------------------------------------------------------------------------


@dataclass
class Match:
    scenario: Scenario
    turn: int  # 0-based index into script
    after: list[Message]  # messages after the triggering one


def find(scenarios: list[Scenario], conv: Conversation) -> Match | None:
    msgs = conv.messages
    for i in range(len(msgs) - 1, -1, -1):
        m = msgs[i]
        if m.role != "user" or not m.texts:
            continue
        text = "\n".join(m.texts)
        for sc in scenarios:
            if sc.trigger.search(text):
                after = msgs[i + 1:]
                k = sum(1 for x in after if x.role == "assistant")
                return Match(sc, k, after)
    return None


# ---- tool mapping ---------------------------------------------------------------------------


def _props(tool: Tool) -> dict:
    props = tool.schema.get("properties") if isinstance(tool.schema, dict) else None
    return props if isinstance(props, dict) else {}


def prop_name(props: dict, key: str) -> str | None:
    """The schema's own name of an abstract argument (case-insensitive), or None."""
    lowered = {k.lower(): k for k in props}
    return next((lowered[n.lower()] for n in ARG_NAMES.get(key, (key,)) if n.lower() in lowered), None)


def _editor_modes(props: dict) -> set[str]:
    command = props.get(prop_name(props, "command") or "")
    enum = command.get("enum") if isinstance(command, dict) else None
    return {kind for kind, mode in EDITOR_MODES.items() if isinstance(enum, list) and mode in enum}


def shapes(tool: Tool) -> set[str]:
    """The tool kinds a function tool's schema has the shape of (module rules)."""
    if tool.kind != "function" or any(word in tool.name.lower() for word in NOT_A_FILE_TOOL):
        return set()
    props = _props(tool)
    command = prop_name(props, "command")
    if command is not None:
        spec = props[command] if isinstance(props[command], dict) else {}
        modes = _editor_modes(props)
        return modes if modes or isinstance(spec.get("enum"), list) else {"bash"}
    if prop_name(props, "path") is None:
        return set()
    if prop_name(props, "old") and prop_name(props, "new"):
        return {"edit"}
    if prop_name(props, "content"):
        return {"write"}
    if any(k.lower() in SEARCH_ARGS for k in props):
        return set()
    return {"read"}


def map_tool(kind: str, tools: list[Tool]) -> Tool | None:
    wanted = TOOL_NAMES.get(kind, (kind,))
    by_name = {t.name.lower(): t for t in tools}
    for w in wanted:
        if w in by_name:
            return by_name[w]
    return next((t for t in tools if kind in shapes(t)), None)


def fill_value(schema: dict):
    if not isinstance(schema, dict):
        return ""
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return fill_value(schema[key][0])
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), typ[0] if typ else "string")
    if typ == "integer":
        return max(0, int(schema.get("minimum", 0)))
    if typ == "number":
        return max(0, schema.get("minimum", 0))
    if typ == "boolean":
        return False
    if typ == "array":  # as many items as the schema asks for (a forced call must fit it)
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        wanted = max(int(schema.get("minItems", 0) or 0), len(prefix) if schema.get("items") is False else 0)
        items = [fill_value(prefix[i] if i < len(prefix) else schema.get("items", {})) for i in range(wanted)]
        if schema.get("uniqueItems") and len({repr(i) for i in items}) < len(items):
            items = [f"{v}{i}" if isinstance(v, str) else v for i, v in enumerate(items)]
        return items
    if typ == "object":
        return fill_object(schema)
    return "x" * int(schema.get("minLength", 0)) if schema.get("minLength") else ""


def fill_object(schema: dict) -> dict:
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    req = schema.get("required") if isinstance(schema, dict) else None
    return {k: fill_value(props.get(k, {})) for k in (req if isinstance(req, list) else []) if isinstance(k, str)}


def build_args(tool: Tool, abstract: dict, workdir: str | None) -> dict:
    props = _props(tool)
    args = {}
    for key, value in abstract.items():
        if key in PATH_ARGS and workdir and not posixpath.isabs(value):
            value = posixpath.join(workdir, value)
        prop = prop_name(props, key) or (ARG_NAMES.get(key, (key,))[0] if not props else key)
        if isinstance(props.get(prop), dict) and props[prop].get("type") == "array" and isinstance(value, str):
            value = [value]
        args[prop] = value
    for k, v in fill_object(tool.schema).items():
        args.setdefault(k, v)
    return args


def workdir(conv: Conversation) -> str | None:
    m = _WORKDIR.search(conv.system_text())
    if m is None:
        user_texts = (t for msg in conv.messages if msg.role == "user" for t in msg.texts)
        m = next((found for t in user_texts if (found := _WORKDIR_IN_USER_TEXT.search(t))), None)
    return m.group(1).rstrip(".,;") if m else None


# ---- templates ------------------------------------------------------------------------------


def clean_result(text: str) -> str:
    text = _REMINDER.sub("", text)
    text = _EXEC_HEADER.sub("", text, count=1)
    lines = []
    for line in text.splitlines():
        if _WRAPPER_LINE.match(line) or _NOTE_LINE.match(line):
            continue
        lines.append(_LINE_PREFIX.sub("", line, count=1))
    return "\n".join(lines).strip("\n")


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _filter(value, name: str):
    if name == "lines":
        return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if name == "sum":
        return sum(value) if isinstance(value, list) else sum(_ints(str(value)))
    if name == "sum_ints":
        return sum(_ints(str(value)))
    if name == "max_int":
        nums = _ints(str(value))
        return max(nums) if nums else ""
    if name == "min_int":
        nums = _ints(str(value))
        return min(nums) if nums else ""
    if name == "upper":
        return str(value).upper()
    if name == "lower":
        return str(value).lower()
    if name == "strip":
        return str(value).strip()
    if name == "first_line":
        return next((ln for ln in str(value).splitlines() if ln.strip()), "")
    if name == "count_lines":
        return sum(1 for ln in str(value).splitlines() if ln.strip())
    if name == "json":
        return json.dumps(value)
    raise EngineScenarioError(f"unknown template filter {name!r}")


def render(template: str, results: list[str], result: str) -> str:
    def sub(m):
        expr = m.group(1).strip()
        if expr == "result":
            value = result
        elif expr.startswith("results."):
            try:
                value = results[int(expr.split(".", 1)[1])]
            except (ValueError, IndexError):
                value = ""
        else:
            value = ""  # variables are the driver's; the engine never sees them
        for f in [f.strip() for f in m.group(2).split("|") if f.strip()]:
            value = _filter(value, f)
        return str(value)

    return _TEMPLATE.sub(sub, template)


# ---- playing --------------------------------------------------------------------------------


def patch_text(kind: str, abstract: dict) -> str | None:
    """One file step as Codex's patch format (a `write` adds the file, an `edit` replaces lines)."""
    path = abstract.get("path", "")
    if kind == "write":
        body = [f"+{line}" for line in str(abstract.get("content", "")).splitlines()]
        lines = [f"*** Add File: {path}", *body]
    elif kind == "edit":
        old = [f"-{line}" for line in str(abstract.get("old", "")).splitlines()]
        new = [f"+{line}" for line in str(abstract.get("new", "")).splitlines()]
        lines = [f"*** Update File: {path}", "@@", *old, *new]
    else:
        return None
    return "\n".join([PATCH_BEGIN, *lines, PATCH_END]) + "\n"


def shell_command(kind: str, abstract: dict) -> str | None:
    """One file step as a shell command line, for a client whose only file tool is its shell."""
    q = shlex.quote
    path = abstract.get("path", "")
    if kind == "read":
        return f"cat {q(path)}"
    if kind == "list":
        return f"ls {q(path or '.')}"
    if kind == "glob":
        return f"ls -d {abstract.get('pattern', '*')}"
    if kind == "grep":
        return f"grep -rn {q(abstract.get('pattern', ''))} ."
    if kind == "write":
        return f"printf '%s' {q(str(abstract.get('content', '')))} > {q(path)}"
    return None


def _joined(abstract: dict, wd: str | None) -> dict:
    return {k: (posixpath.join(wd, v) if k in PATH_ARGS and wd and not posixpath.isabs(v) else v)
            for k, v in abstract.items()}


def fallback_call(kind: str, abstract: dict, tools: list[Tool], wd: str | None) -> tuple[str, object] | None:
    """The step through the client's patch or shell tool when it offers no tool of the kind."""
    abstract = _joined(abstract, wd)
    by_name = {t.name.lower(): t for t in tools}
    patch_tool = next((by_name[n] for n in PATCH_TOOLS if n in by_name), None)
    patch = patch_text(kind, abstract)
    if patch_tool is not None and patch is not None:
        if patch_tool.kind == "custom":
            return patch_tool.name, patch
        return patch_tool.name, build_args(patch_tool, {"input": patch}, None)
    shell = map_tool("bash", tools)
    command = shell_command(kind, abstract)
    if shell is not None and command is not None:
        return shell.name, build_args(shell, {"command": command}, None)
    return None


@dataclass
class Turn:
    thinking: str | None
    text: str | None
    calls: list[tuple[str, object]]  # (offered tool name, arguments: a dict, or a custom tool's raw text)
    scenario: str


def plan(match: Match, conv: Conversation) -> Turn | None:
    script = match.scenario.script
    idx = min(match.turn, len(script) - 1)
    step = script[idx]
    if match.turn >= len(script) and "text" not in step:
        return None
    results_raw = [r.text for m in match.after for r in m.results]
    results = [clean_result(t) for t in results_raw]
    result = _previous_first_result(match.after)
    thinking = render(step["thinking"], results, result) if step.get("thinking") else None
    if "tool_calls" in step:
        wd = workdir(conv)
        calls = []
        for call in step["tool_calls"]:
            kind = call.get("tool", "")
            tool = map_tool(kind, conv.tools)
            abstract = {k: render(v, results, result) for k, v in (call.get("args") or {}).items()}
            if tool is not None and kind in _editor_modes(_props(tool)):
                abstract = {"command": EDITOR_MODES[kind], **abstract}
            if tool is not None and tool.kind == "function":
                calls.append((tool.name, build_args(tool, abstract, wd)))
                continue
            fallback = fallback_call(kind, abstract, conv.tools, wd)
            if fallback is None:
                return None
            calls.append(fallback)
        return Turn(thinking, None, calls, match.scenario.id)
    return Turn(thinking, render(step["text"], results, result), [], match.scenario.id)


def _previous_first_result(after: list[Message]) -> str:
    """Text of the tool result answering the first call of the last assistant message."""
    last_asst = None
    for i, m in enumerate(after):
        if m.role == "assistant":
            last_asst = i
    if last_asst is None:
        return ""
    calls = after[last_asst].calls
    later = [r for m in after[last_asst + 1:] for r in m.results]
    if calls:
        for r in later:
            if r.id == calls[0].id:
                return clean_result(r.text)
    return clean_result(later[0].text) if later else ""
