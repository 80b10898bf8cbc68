"""The layout of `conformance`, kept by tests that read the source (ast), not by review.

Rules (docs/DEVELOPING.md, "Layout"):
- Every judge module sits on one floor, named by its package; the top-level
  `conformance/__init__.py` counts as core. Bottom to top:
  core < wire < clients < net < checks < capture < report < layers < {loop, probes}
  < {suite, commands, peers, locust} < {plugin, cli}. A module imports its own floor or a lower
  one, never a higher one — not even lazily inside a function (every `import` in the file counts).
- The test doubles (engine/, router/) stand apart: their own tests (tests/engine/test_independence.py,
  tests/router/test_independence.py) allow them only their own package and conformance.core.paths.
  The judge may import a double only from a front end that launches it — commands, suite, peers,
  plugin, cli and capture.recapture (the recapture drives the real clients against the
  reference engine); those imports are legitimate and allowed here.
- No import circle between modules, counting module-level and function-level imports alike.
- Directly in conformance/ sit only `__init__.py`, `cli.py` and `plugin.py`: everything else has a floor.
- A wire is known by name only inside conformance/wire/, a client only inside conformance/clients/
  (the doubles speak their own names): elsewhere no comparison (`==`, `!=`, `is`, `in`, either
  side), `.startswith`/`.endswith`, dict key or `case` names a registered dialect (its name string
  or its constant, ANTHROPIC / CHAT / RESPONSES) or a registered client, and no tuple, list or set
  lists two client names. Code passes a Dialect and asks its properties, and asks a client's
  profile. The names are read from the registries, so a new wire or client is guarded at once.
- No module is over 500 lines unless LONG_MODULES lists it with why (data tables only).
- A fresh process's `conformance report html` shows the title of every check of every scope a
  results file names (the registry loads its catalog itself).
- An import of a conformance module inside a function carries a comment on its line or the line
  above saying why: the circle it breaks, or the optional part it loads lazily.
- Tests mirror packages: every folder in tests/ is a conformance package's name (or `plugin`, for
  plugin.py); a file directly in tests/ is a shared helper listed in SHARED_TEST_FILES.
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from functools import cache
from html import escape
from pathlib import Path

import conformance.wire
from conformance.clients import PROFILES
from conformance.core.results import Result
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS

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


@cache
def source_of(module: str) -> str:
    """A module's source, read once per run (every rule below reads the whole tree)."""
    return MODULES[module].read_text(encoding="utf-8")


@cache
def tree_of(module: str) -> ast.Module:
    """A module's syntax tree, parsed once per run."""
    return ast.parse(source_of(module), str(MODULES[module]))


def imports_of(module: str) -> Iterator[tuple[int, str]]:
    """(line, conformance module) for every import in the file, at module level or inside a function."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree_of(module)):
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


# ----------------------------------------------------------------------------- (d) names of wires and clients
# The registered names and constants, read from the registries themselves: a new wire or client
# is guarded the moment it is registered.
DIALECT_NAMES = frozenset(DIALECTS)  # the registry keys each wire by its own name
DIALECT_CONSTANTS = frozenset(name for name, value in vars(conformance.wire).items() if isinstance(value, Dialect))
CLIENT_NAMES = frozenset(PROFILES)
# Who owns the names: wire/ its wires', clients/ its clients'; the doubles speak their own names
# (they import nothing of the judge, by design).
DIALECT_OWNERS = {"wire", *DOUBLES}
CLIENT_OWNERS = {"clients", *DOUBLES}
COLLECTIONS = (ast.Tuple, ast.List, ast.Set)


class NameUses(ast.NodeVisitor):
    """(line, column, what) for every place a source names a wire or a client to decide by it:
    a comparison (`==`, `!=`, `is`, `in`, either side) against a name string or a Dialect constant,
    `.startswith`/`.endswith` with a name, a dict literal keyed by one, a `case` on one, and with
    `lists` a tuple/list/set literal of two names or more (a list of the clients)."""

    def __init__(self, names: frozenset[str], constants: frozenset[str] = frozenset(), lists: bool = False):
        self.names, self.constants, self.lists = names, set(constants), lists
        self.found: set[tuple[int, int, str]] = set()

    def _name(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and node.value in self.names

    def _constant(self, node: ast.AST) -> bool:
        return ((isinstance(node, ast.Name) and node.id in self.constants)
                or (isinstance(node, ast.Attribute) and node.attr in self.constants))

    def _named(self, node: ast.AST) -> bool:
        one = self._name(node) or self._constant(node)
        return one or (isinstance(node, COLLECTIONS) and any(self._name(e) or self._constant(e) for e in node.elts))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # `from conformance.wire import CHAT as C`
        self.constants |= {a.asname for a in node.names if a.name in self.constants and a.asname}

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(self._named(operand) for operand in (node.left, *node.comparators)):
            self.found.add((node.lineno, node.col_offset, "compares against"))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith")
                and any(self._named(a) for a in node.args)):
            self.found.add((node.lineno, node.col_offset, f"calls .{node.func.attr} with"))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if key is not None and (self._name(key) or self._constant(key)):
                self.found.add((key.lineno, key.col_offset, "keys a dict literal by"))
        self.generic_visit(node)

    def visit_MatchValue(self, node: ast.MatchValue) -> None:
        if self._name(node.value) or self._constant(node.value):
            self.found.add((node.lineno, node.col_offset, "matches a case on"))
        self.generic_visit(node)

    def _collection(self, node: ast.Tuple | ast.List | ast.Set) -> None:
        if self.lists and sum(self._name(e) for e in node.elts) >= 2:
            self.found.add((node.lineno, node.col_offset, "lists"))
        self.generic_visit(node)

    visit_Tuple = visit_List = visit_Set = _collection


def name_uses(source: str, names: frozenset[str], constants: frozenset[str] = frozenset(),
              lists: bool = False) -> list[tuple[int, int, str]]:
    visitor = NameUses(names, constants, lists)
    visitor.visit(ast.parse(source))
    return sorted(visitor.found)


def _name_scan(owners: set[str], kind: str, **scan) -> list[str]:
    offenders = []
    for module in MODULES:
        if floor_of(module) in owners:
            continue
        lines = source_of(module).splitlines()
        for line, column, what in name_uses(source_of(module), **scan):
            offenders.append(f"{rel(module)}:{line}:{column + 1}: {lines[line - 1].strip()}  <- {what} {kind}")
    return offenders


def test_name_scanner_sees_every_form():
    source = ('a = api == "anthropic"\nb = "openai" != api\nc = api in ("anthropic", "x")\n'
              'd = api not in {"responses"}\ne = {"openai": 1}\nf = api == "other"\ng = "openai" in text\n'
              'match api:\n    case "anthropic":\n        pass\nh = wire is RESPONSES\ni = dialect(x) is not CHAT\n'
              'j = d.name == "responses"\nk = w in (CHAT, ANTHROPIC)\nl = w == wire_pkg.ANTHROPIC\nm = {CHAT: 1}\n'
              'from conformance.wire import CHAT as C\nn = w is C\no = w is wire\np = name.startswith("openai")\n'
              'q = ("anthropic", "openai")\n')
    seen = name_uses(source, frozenset({"anthropic", "openai", "responses"}),
                     frozenset({"ANTHROPIC", "CHAT", "RESPONSES"}))
    assert [line for line, _, _ in seen] == [1, 2, 3, 4, 5, 7, 9, 11, 12, 13, 14, 15, 16, 18, 20]
    clients = name_uses('CLIENTS = ("all", "claude-code", "codex")\nx = {"claude-code": 1}\n'
                        'y = k.startswith("opencode")\nz = "codex" in test_id\nw = ("codex",)\n',
                        frozenset({"claude-code", "codex", "opencode"}), lists=True)
    assert [(line, what) for line, _, what in clients] == [
        (1, "lists"), (2, "keys a dict literal by"), (3, "calls .startswith with"), (4, "compares against")]


def test_judge_code_outside_wire_never_decides_by_a_dialect_name_or_identity():
    offenders = _name_scan(DIALECT_OWNERS, "a dialect name or constant", names=DIALECT_NAMES,
                           constants=DIALECT_CONSTANTS)
    assert not offenders, (
        f"{len(offenders)} comparison(s) against a dialect's name or identity outside conformance/wire/: pass the "
        "Dialect and ask one of its properties (carries_items, may_be_absent, rule_prefix, ...), or add one:\n"
        + "\n".join(offenders))


def test_judge_code_outside_clients_never_decides_by_a_client_name():
    offenders = _name_scan(CLIENT_OWNERS, "a client name", names=CLIENT_NAMES, lists=True)
    assert not offenders, (
        f"{len(offenders)} comparison(s), table(s) or list(s) of client names outside conformance/clients/: a fact "
        "about a client is a field of its profile (conformance/clients/profile.py), and code asks the profile "
        "(profile(name), PROFILES):\n" + "\n".join(offenders))


# ----------------------------------------------------------------------------- (e) module size
MAX_LINES = 500
# Modules allowed over MAX_LINES: data tables only (path -> why). Each entry must still be over
# the limit, so a listed module that shrinks leaves the list.
LONG_MODULES: dict[str, str] = {}  # none today


def _line_count(module: str) -> int:
    return len(source_of(module).splitlines())


def test_no_module_is_over_500_lines_unless_listed():
    long = {rel(m): n for m in MODULES if (n := _line_count(m)) > MAX_LINES}
    unlisted = [f"{path}: {n} lines" for path, n in sorted(long.items()) if path not in LONG_MODULES]
    assert not unlisted, (f"modules over {MAX_LINES} lines: split them at their seams (docs/DEVELOPING.md); only a "
                          "data table may be listed in LONG_MODULES here, with why:\n" + "\n".join(unlisted))
    stale = sorted(set(LONG_MODULES) - set(long))
    assert not stale, f"listed in LONG_MODULES but not over {MAX_LINES} lines (or gone): remove them: {stale}"


# ----------------------------------------------------------------------------- (f) a fresh report
REPORT_SCOPES = ("wire", "exchange", "hop", "loop", "probe", "suite")


def _fresh(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run in a new interpreter that has imported nothing of this test session."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def registering_modules() -> list[str]:
    """The judge modules whose source registers a check (calls register, check or register_rule),
    found from the source, not by the registry's own loader, which is what is under test."""
    found = []
    for module in MODULES:
        if floor_of(module) in (*DOUBLES, "locust"):  # locust monkey-patches the process on import
            continue
        calls = (n.func for n in ast.walk(tree_of(module)) if isinstance(n, ast.Call))
        if any((f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")) in ("register", "check", "register_rule")
               for f in calls):
            found.append(module)
    return found


# Every check the project's modules register, listed by a process that imports those modules by
# name first (not this one: the tests register checks of their own).
LIST_CHECKS = ("import importlib, json, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
               "from conformance.core import registry\n"
               "print(json.dumps([[spec.id, spec.scope, spec.title] for spec in registry.registered()]))")


def test_a_fresh_report_html_shows_the_title_of_every_scope_s_checks(tmp_path):
    """`conformance report html` in a new process (nothing imported beforehand, as a user runs it)
    finds the title of every check a results file names, whichever module registered it."""
    listed = _fresh("-c", LIST_CHECKS, *registering_modules())
    assert listed.returncode == 0, listed.stderr
    checks = json.loads(listed.stdout)
    titles = {check_id: title for check_id, _, title in checks}
    ids = {scope: [check_id for check_id, of, _ in checks if of == scope] for scope in REPORT_SCOPES}
    assert all(ids.values()), f"scopes with no registered check: {[s for s, found in ids.items() if not found]}"
    picked = [check_id for found in ids.values() for check_id in found]
    results = tmp_path / "run" / "results"
    results.mkdir(parents=True)
    records = [Result(test_id=f"test_replay.py::test_replay[claude-code/x-{n}]", check_id=check_id,
                      outcome="failed" if n % 2 else "passed", api="anthropic", message=f"finding {n}")
               for n, check_id in enumerate(picked)]
    (results / "results-main.jsonl").write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
    done = _fresh("-m", "conformance.cli", "report", "html", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    missing = [check_id for check_id in picked if escape(titles[check_id], quote=True) not in page]
    assert not missing, (f"report.html rendered in a fresh process lacks the titles of {len(missing)} of "
                         f"{len(picked)} checks (is every module that registers one in registry.CATALOG?): "
                         f"{missing[:12]}{' ...' if len(missing) > 12 else ''}")


# ----------------------------------------------------------------------------- (g) function-level imports
def _comment_lines(source: str) -> set[int]:
    return {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT}


def unexplained_function_imports(source: str) -> list[int]:
    """The first line of every import of a conformance module inside a function with no comment on
    its lines or the line above. Consecutive imports share the comment above the first of them."""
    comments = _comment_lines(source)
    unexplained = []

    def conformance_import(node: ast.stmt) -> bool:
        if isinstance(node, ast.Import):
            return any(alias.name.split(".")[0] == "conformance" for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            return bool(node.level) or (node.module or "").split(".")[0] == "conformance"
        return False

    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in (getattr(n, field) for n in ast.walk(function) for field in ("body", "orelse", "finalbody")
                     if isinstance(getattr(n, field, None), list)):
            explained_above = False
            previous_end = -1
            for statement in body:
                if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                    explained_above = False
                    continue
                lines = set(range(statement.lineno - 1, (statement.end_lineno or statement.lineno) + 1))
                explained = bool(lines & comments) or (explained_above and previous_end == statement.lineno - 1)
                if conformance_import(statement) and not explained:
                    unexplained.append(statement.lineno)
                explained_above, previous_end = explained, statement.end_lineno or statement.lineno
    return sorted(set(unexplained))


def test_function_import_scanner():
    source = ("def a():\n    from conformance.x import y\n"  # 2: unexplained
              "def b():\n    # a circle: x imports this module\n    from conformance.x import y\n    import conformance.z\n"
              "def c():\n    import json\n    from . import sibling  # lazily loaded: only when asked\n"
              "def d():\n    if x:\n        from conformance import __version__\n"  # 12: unexplained
              "def e():\n    import json\n\n    from conformance.q import r\n")  # 16: a blank line breaks the block
    assert unexplained_function_imports(source) == [2, 12, 16]


def test_every_function_level_import_says_why():
    bad = []
    for module in MODULES:
        source = source_of(module)
        lines = source.splitlines()
        bad += [f"{rel(module)}:{n}: {lines[n - 1].strip()}" for n in unexplained_function_imports(source)]
    assert not bad, ("imports of conformance modules inside a function with no comment saying why (on the line or "
                     "the line above: the circle it breaks, or the optional part it loads lazily); move them to "
                     "the module top where nothing forces them down:\n" + "\n".join(bad))


# ----------------------------------------------------------------------------- (h) tests mirror packages
TESTS_DIR = Path(__file__).resolve().parent
# Files directly in tests/: shared by the test packages, or about the whole tree (name -> why).
SHARED_TEST_FILES = {
    "conftest.py": "the root conftest (pytester is enabled only there)",
    "suite_runner.py": "the reference engine in a thread and the suite in pytester (tests/suite, tests/plugin)",
    "loopback.py": "a scripted aiohttp app on a loopback port, for the tests of several packages",
    "test_layout.py": "the floors of the whole tree",
    "test_fault_table.py": "fixtures/faults.json against the catalog in docs/faults.md, the registry and both doubles",
    "test_sdk_api_script.py": "scripts/sdk_api_tests.py, which is no package's",
    "test_docs.py": "docs/*.md and README.md against the tree (every path, name, option and check id they mention)",
}


def test_tests_mirror_packages():
    packages = {p.parent.name for p in PACKAGE_DIR.glob("*/__init__.py")} | {"plugin"}
    folders = sorted(p.name for p in TESTS_DIR.iterdir()
                     if p.is_dir() and not p.name.startswith((".", "_")) and p.name not in packages)
    files = sorted(p.name for p in TESTS_DIR.iterdir() if p.is_file() and p.name not in SHARED_TEST_FILES)
    problems = [f"tests/{name}/: no conformance package of that name (tests/<package>/ holds the tests of "
                "conformance/<package>/, tests/plugin/ those of plugin.py)" for name in folders]
    problems += [f"tests/{name}: a module's tests go in tests/<package>/; a shared helper is listed in "
                 "SHARED_TEST_FILES here, with why" for name in files]
    assert not problems, "tests do not mirror packages:\n" + "\n".join(problems)
