"""The floors of `conformance`, kept by tests that read the source (ast), not by review.

Rules (docs/DEVELOPING.md, "Layout"):
- Every judge module sits on one floor, named by its package; the top-level
  `conformance/__init__.py` counts as core. Bottom to top:
  core < wire < net < checks < capture < report < layers < {loop, clients, probes}
  < {suite, commands, peers} < {plugin, cli}. A module imports its own floor or a lower one, never
  a higher one — not even lazily inside a function (every `import` in the file counts).
- The test doubles (engine/, router/) stand apart: their own tests (tests/engine/test_independence.py,
  tests/router/test_independence.py) allow them only their own package and conformance.core.paths.
  The judge may import a double only from a front end that launches it — commands, suite, peers,
  clients, plugin, cli and capture.recapture (the recapture drives the real clients against the
  reference engine); those imports are legitimate and allowed here.
- No import circle between modules, counting module-level and function-level imports alike.
- Directly in conformance/ sit only `__init__.py`, `cli.py` and `plugin.py`: everything else has a floor.
- Outside conformance/wire/, judge code asks `conformance.wire.dialect.dialect(api)` instead of
  comparing against a dialect name; a line that truly must compare carries
  `# dialect-name: <reason>` and is listed when the test runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "conformance"

# Bottom to top; packages in one tuple share a floor (they may import each other).
FLOOR_ORDER: tuple[tuple[str, ...], ...] = (
    ("core",), ("wire",), ("clients",), ("net",), ("checks",), ("capture",), ("report",), ("layers",),
    ("loop", "probes"), ("suite", "commands", "peers", "locust"), ("plugin", "cli"),
)
FLOOR_RANK = {package: rank for rank, packages in enumerate(FLOOR_ORDER) for package in packages}
DOUBLES = ("engine", "router")
# Front ends: they start the reference engine/router for the user or for a recapture.
DOUBLE_LAUNCHERS = {"commands", "suite", "peers", "plugin", "cli"}
DOUBLE_LAUNCHER_MODULES = {"conformance.capture.recapture"}
TOP_LEVEL_FILES = {"__init__.py", "cli.py", "plugin.py"}
# Entry points kept where users run them (`python -m conformance.clients.recapture`) that only
# forward to the module that does the work, wherever it sits.
FORWARDERS = {"conformance.clients.recapture": "conformance.capture.recapture"}


# ----------------------------------------------------------------------------- reading the tree
def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def floor_of(module: str) -> str:
    """The package that names a module's floor: conformance.checks.tools -> checks; conformance -> core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "core"


def _known(name: str) -> str | None:
    """The conformance module an import name loads: the longest known prefix (a package is its __init__)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(module: str) -> Iterator[tuple[int, str]]:
    """(line, conformance module) for every import in the file, at module level or inside a function."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target:
                    yield node.lineno, target
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                # `from pkg import sub` loads the submodule; `from pkg import name` loads pkg
                target = _known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in MODULES else _known(base)
                if target:
                    yield node.lineno, target


def rel(module: str) -> str:
    return str(MODULES[module].relative_to(PACKAGE_DIR.parent))


def judge_modules() -> list[str]:
    return [m for m in MODULES if floor_of(m) not in DOUBLES]


# ----------------------------------------------------------------------------- (a) floors
def test_every_judge_package_has_a_floor():
    unknown = sorted({floor_of(m) for m in judge_modules()} - set(FLOOR_RANK))
    assert not unknown, (f"conformance packages with no floor: {unknown}; add them to FLOOR_ORDER here and to "
                         "the Layout section of docs/DEVELOPING.md")


def test_no_module_imports_a_higher_floor():
    bad = []
    for module in judge_modules():
        own = floor_of(module)
        for line, target in imports_of(module):
            theirs = floor_of(target)
            if theirs in DOUBLES:
                if own not in DOUBLE_LAUNCHERS and module not in DOUBLE_LAUNCHER_MODULES:
                    bad.append(f"{rel(module)}:{line}: {module} (floor {own}) imports {target} (the {theirs} "
                               "test double): only a front end that launches a double may import it")
            elif FORWARDERS.get(module) == target:
                continue
            elif FLOOR_RANK[theirs] > FLOOR_RANK[own]:
                bad.append(f"{rel(module)}:{line}: {module} (floor {own}) imports {target} "
                           f"(floor {theirs}, higher)")
    assert not bad, ("a lower floor never imports a higher one (order: "
                     + " < ".join("{" + ", ".join(p) + "}" if len(p) > 1 else p[0] for p in FLOOR_ORDER)
                     + "):\n" + "\n".join(bad))


# ----------------------------------------------------------------------------- (b) no circles
def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest circle through each strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the module count (~120)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)

    circles = []
    for group in groups:
        start, members = group[0], set(group)
        paths = {start: [start]}
        frontier = [start]
        while frontier and start not in paths.get("<back>", []):
            nxt_frontier = []
            for node in frontier:
                for nxt in sorted(graph[node] & members):
                    if nxt == start:
                        paths.setdefault("<back>", paths[node] + [start])
                    elif nxt not in paths:
                        paths[nxt] = paths[node] + [nxt]
                        nxt_frontier.append(nxt)
            frontier = nxt_frontier
        circles.append(paths["<back>"])
    return circles


def test_no_import_circle_between_modules():
    graph = {m: {t for _, t in imports_of(m) if t != m} for m in MODULES}
    circles = _cycles(graph)
    assert not circles, "import circles (module-level and function-level imports alike):\n" + "\n".join(
        " -> ".join(circle) for circle in circles)


def test_cycle_finder_reports_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# ----------------------------------------------------------------------------- (c) top level
def test_only_the_entry_points_sit_directly_in_the_package():
    loose = sorted(p.name for p in PACKAGE_DIR.glob("*.py") if p.name not in TOP_LEVEL_FILES)
    assert not loose, (f"modules directly in conformance/: {loose}; only {sorted(TOP_LEVEL_FILES)} live there, "
                       "everything else goes on its floor (docs/DEVELOPING.md, 'Where does it go')")


# ----------------------------------------------------------------------------- (d) dialect names
DIALECT_NAMES = {"anthropic", "openai", "responses"}
EXCEPTION_COMMENT = re.compile(r"#\s*dialect-name:(.*)$")
DIALECT_EXEMPT = {"wire", *DOUBLES}  # wire/ owns the names; the doubles are independent by design


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in DIALECT_NAMES


def dialect_name_uses(source: str) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, what) for every comparison against a dialect name and dict key by one."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                if isinstance(op, (ast.Eq, ast.NotEq)) and (_is_name(left) or _is_name(right)):
                    yield node.lineno, node.end_lineno or node.lineno, "compares against a dialect name"
                elif (isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                      and any(_is_name(e) for e in right.elts)):
                    yield node.lineno, node.end_lineno or node.lineno, "tests membership in dialect names"
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None and _is_name(key):
                    yield key.lineno, key.end_lineno or key.lineno, "keys a dict literal by a dialect name"
        elif isinstance(node, ast.MatchValue) and _is_name(node.value):
            yield node.lineno, node.end_lineno or node.lineno, "matches a case on a dialect name"


def _dialect_scan() -> tuple[list[str], list[str]]:
    offenders: set[tuple[str, int, str]] = set()
    exceptions: set[tuple[str, int, str]] = set()
    for module in judge_modules():
        if floor_of(module) in DIALECT_EXEMPT:
            continue
        lines = MODULES[module].read_text(encoding="utf-8").splitlines()
        for first, last, what in dialect_name_uses("\n".join(lines)):
            reasons = [m.group(1).strip() for m in map(EXCEPTION_COMMENT.search, lines[first - 1:last]) if m]
            code = lines[first - 1].strip()
            if any(reasons):
                exceptions.add((rel(module), first, f"{code}  [{'; '.join(r for r in reasons if r)}]"))
            else:
                offenders.add((rel(module), first, f"{code}  <- {what}"
                               + ("; the # dialect-name: comment needs a reason" if reasons else "")))
    return ([f"{path}:{line}: {text}" for path, line, text in sorted(offenders)],
            [f"{path}:{line}: {text}" for path, line, text in sorted(exceptions)])


def test_dialect_name_scanner_sees_every_form():
    source = ('a = api == "anthropic"\nb = "openai" != api\nc = api in ("anthropic", "x")\n'
              'd = api not in {"responses"}\ne = {"openai": 1}\nf = api == "other"\ng = "openai" in text\n'
              'match api:\n    case "anthropic":\n        pass\n')
    assert [(first, what.split()[0]) for first, _, what in dialect_name_uses(source)] == [
        (1, "compares"), (2, "compares"), (3, "tests"), (4, "tests"), (5, "keys"), (9, "matches")]


def test_judge_code_outside_wire_never_branches_on_a_dialect_name():
    offenders, exceptions = _dialect_scan()
    print("listed exceptions (# dialect-name: <reason>):\n" + ("\n".join(exceptions) or "(none)"))
    assert not offenders, (
        f"{len(offenders)} dialect-name branch(es) outside conformance/wire/ (ask conformance.wire.dialect.dialect(api) "
        "instead, or keep the line with a `# dialect-name: <reason>` comment):\n" + "\n".join(offenders))
