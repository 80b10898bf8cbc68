"""A client's tools as the sandbox plays them: a table, not code.

Rules:
- A client's persona table sits in its profile module (`conformance.clients.profiles`), written
  with `bind`; this module holds the model and the persona of a client without a table.
- A `Persona` maps each tool name a client offers (a tool inside a Responses namespace as
  `namespace.name`, `tool_key`) to a `ToolBinding`: the sandbox operation it performs and, for
  each of the operation's parameters, the client's own argument name. A parameter the operation
  can default but the client requires is listed in the binding's `required` (Claude Code's LS
  needs its `path`). How results and errors are worded is the persona's `voice`, a name the
  sandbox's voices know (`conformance.loop.voices` words each client's tool results as that
  client does; a voice it does not know words them plainly); nothing outside the profiles
  compares a client's name.
- The operations (the sandbox implements each once): read(path, offset, limit), write(path,
  content), edit(path, old, new, all), shell(command, cwd), glob(pattern, path), grep(pattern,
  path, include, mode, ignore_case), list(path), patch(input) (Codex's freeform apply_patch) and
  read_file(path) (an MCP server's file read).
- An unknown client, and a profile without a persona table (`BY_SHAPE`), gets
  `persona_by_shape(tools)`: each offered tool mapped by the shape of its schema — a command runs
  in the shell, a path with old and new text edits, a path with content writes, a path alone
  reads — with the client's own argument names, so its loops run; the generic voice words
  results plainly. A tool whose schema has none of these shapes (a search, a
  freeform tool, an editor whose `command` is an enum of modes) is left out: calling it is an
  unknown tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

OPERATIONS = ("read", "write", "edit", "shell", "glob", "grep", "list", "patch", "read_file")


def tool_key(name: str, namespace: str | None = None) -> str:
    """How a persona names a tool: its name, or `namespace.name` inside a Responses namespace."""
    return name if namespace is None else f"{namespace}.{name}"


@dataclass(frozen=True)
class ToolBinding:
    operation: str
    arguments: Mapping[str, str] = field(default_factory=dict)  # operation parameter -> the client's name
    required: frozenset[str] = frozenset()  # parameters the client requires although the operation defaults them

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"unknown sandbox operation {self.operation!r}: one of {OPERATIONS}")
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))
        object.__setattr__(self, "required", frozenset(self.required))


@dataclass(frozen=True)
class Persona:
    voice: str  # how results and errors are worded (a voice the sandbox knows)
    tools: Mapping[str, ToolBinding]
    read_before_write: bool = True  # an existing file must be read before it is overwritten or edited

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", MappingProxyType(dict(self.tools)))

    def binding(self, name: str, namespace: str | None = None) -> ToolBinding | None:
        return self.tools.get(tool_key(name, namespace))

    @property
    def tool_names(self) -> list[str]:
        return sorted(self.tools)


def bind(operation: str, required: tuple[str, ...] = (), **arguments: str) -> ToolBinding:
    """A binding in a profile's table: `bind("read", path="file_path")` (the client's argument names
    as keywords; `required`: the parameters it requires although the operation defaults them)."""
    return ToolBinding(operation, arguments, frozenset(required))


# A profile with no persona table: the loop builds its persona from the offered tools' shapes
# (`persona_by_shape`), worded by the generic voice.
BY_SHAPE = Persona("generic", {}, read_before_write=False)


def _properties(schema: object) -> dict:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


_PATH_NAMES = ("file_path", "filepath", "filePath", "path", "absolute_path", "file", "filename")
_CONTENT_NAMES = ("content", "contents", "text", "file_text", "data")
_COMMAND_NAMES = ("command", "cmd", "commands", "script")
_CWD_NAMES = ("workdir", "cwd", "directory", "working_directory")
_OLD_NAMES = ("old_string", "oldString", "old_str", "old_text", "old", "search")
_NEW_NAMES = ("new_string", "newString", "new_str", "new_text", "new", "replace")


def _first(props: dict, names: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): k for k in props}
    return next((lowered[n.lower()] for n in names if n.lower() in lowered), None)


def binding_by_shape(schema: object) -> ToolBinding | None:
    """The operation a tool's schema has the shape of (None: none the sandbox plays)."""
    props = _properties(schema)
    command = _first(props, _COMMAND_NAMES)
    if command is not None and isinstance(props[command], dict) and "enum" in props[command]:
        return None  # an editor's mode (view / create / str_replace), not a command line
    if command is not None:
        cwd = _first(props, _CWD_NAMES)
        return ToolBinding("shell", {"command": command, **({"cwd": cwd} if cwd else {})})
    path = _first(props, _PATH_NAMES)
    if path is None:
        return None
    old, new = _first(props, _OLD_NAMES), _first(props, _NEW_NAMES)
    if old is not None and new is not None:
        return ToolBinding("edit", {"path": path, "old": old, "new": new})
    content = _first(props, _CONTENT_NAMES)
    if content is not None:
        return ToolBinding("write", {"path": path, "content": content})
    return ToolBinding("read", {"path": path, **{k: k for k in ("offset", "limit") if k in props}})


def persona_by_shape(tools: Mapping[str, object]) -> Persona:
    """A persona for a client the suite does not know: every offered tool (`tool_key` -> its
    schema) whose schema has the shape of an operation, bound to it with the client's argument
    names."""
    bound = {name: b for name, schema in tools.items() if (b := binding_by_shape(schema)) is not None}
    return Persona(BY_SHAPE.voice, bound, read_before_write=BY_SHAPE.read_before_write)
