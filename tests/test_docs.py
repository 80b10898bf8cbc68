"""The documentation names only what the repository holds: docs/*.md and README.md, read as text.

Rules:
- A repository path (`conformance/...`, `tests/...`, `fixtures/...`, `captured/...`, `docs/...`,
  `benchmarks/...`, `scripts/...`, `.ci/...`) exists. A placeholder segment (`<client>`, an
  upper-case word such as `CLIENT` or `OLD`, a `*`, a `{a,b}` choice) stands for any name: the
  path then matches at least one file. `reports/...` is generated output and is not checked.
  A path in another project (the SDKs' own tests) is listed in FOREIGN_PATHS with its reason.
- `path.py::name` names a function or class defined in that file.
- A dotted name `conformance.x.y` is a module, package or a name defined in one (read from the
  source, nothing is imported: `conformance.locust` would monkey-patch the standard library), or
  a format name the code writes as a string (`"conformance.baseline"`).
- Every `--conformance-*` option named is one the code defines.
- A backticked check id of a registered area (`tools.call_structured`) is registered; request
  fields spelled like one are listed in NOT_CHECK_IDS.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from conformance.core.registry import registered

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
CODE_DIR = ROOT / "conformance"

PATH = re.compile(r"(?<![\w/.~$-])((?:conformance|tests|fixtures|captured|docs|benchmarks|scripts|\.ci)/"
                  r"[\w./*<>{},-]*(?:::[\w*]+)?)")
DOTTED = re.compile(r"(?<![\w/.-])(conformance(?:\.\w+)+)(?![\w-])")
OPTION = re.compile(r"--conformance-[a-z0-9-]*[a-z0-9]")
TICKED = re.compile(r"`([a-z_]+\.[a-z0-9_.]+)`")

FOREIGN_PATHS = {
    # docs/sdk-api-tests.md: the generated tests inside the anthropic and openai sdists.
    "tests/api_resources/test_messages.py", "tests/api_resources/chat/test_completions.py",
    "tests/api_resources/test_responses.py",
}
# Request fields and values that read like a check id of a registered area.
NOT_CHECK_IDS = {"reasoning.effort", "reasoning.summary", "reasoning.encrypted_content"}


@cache
def _doc_lines() -> tuple[tuple[str, str], ...]:
    """(where, line) for every line of the docs, where = `file:line`; read once per run."""
    return tuple((f"{doc.relative_to(ROOT)}:{number}", line) for doc in DOCS
                 for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1))


def _mentions(pattern: re.Pattern) -> list[tuple[str, str]]:
    """(where, match) for every match in the docs, where = `file:line`."""
    return [(where, m.group(1) if m.groups() else m.group(0))
            for where, line in _doc_lines() for m in pattern.finditer(line)]


def _as_glob(path: str) -> str | None:
    """The glob a path with placeholders stands for; None for a plain path."""
    segments = []
    for segment in path.split("/"):
        plain = re.sub(r"<[^>]*>", "*", segment)
        plain = re.sub(r"\{[^}]*\}", "*", plain)
        if re.fullmatch(r"[A-Z][A-Z_]*(\.\w+)?", plain) and plain not in {"README.md", "DEVELOPING.md"}:
            plain = "*" + plain[plain.index("."):] if "." in plain else "*"
        segments.append(plain)
    glob = "/".join(segments)
    return glob if "*" in glob else None


def _path_problem(path: str) -> str | None:
    path, _, name = path.rstrip(".,").partition("::")
    if path in FOREIGN_PATHS:
        return None
    glob = _as_glob(path)
    if glob is not None:
        return None if next(ROOT.glob(glob.rstrip("/")), None) else f"no file matches {glob}"
    if not (ROOT / path).exists():
        return "no such file or folder"
    pattern = re.escape(name).replace(r"\*", r"\w*")
    if name and not re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{pattern}\b",
                              (ROOT / path).read_text(encoding="utf-8"), re.MULTILINE):
        return f"{path} defines no {name}"
    return None


def _module_file(dotted: str) -> Path | None:
    base = ROOT / dotted.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _module_names(path: Path) -> dict[str, ast.AST]:
    return _defined(ast.parse(path.read_text(encoding="utf-8")).body)


def _defined(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body defines or imports, each with its node."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names[leaf.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


@cache
def _code_strings() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in CODE_DIR.rglob("*.py"))


def _name_resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:cut]))
        if module is None:
            continue
        scope = _module_names(module)
        for part in parts[cut:]:
            node = scope.get(part)
            if node is None:
                return False
            scope = _defined(node.body) if isinstance(node, ast.ClassDef) else {}
        return True
    return False


def test_every_repository_path_in_the_docs_exists():
    problems = [f"{where}: {path}: {problem}" for where, path in _mentions(PATH)
                if (problem := _path_problem(path))]
    assert problems == [], ("repository paths the docs mention that do not exist: fix the doc, or list a path of "
                            "another project in FOREIGN_PATHS with why\n" + "\n".join(problems))


def test_every_dotted_conformance_name_in_the_docs_exists():
    missing = [f"{where}: {name}" for where, name in _mentions(DOTTED)
               if not _name_resolves(name) and f'"{name}"' not in _code_strings()]
    assert missing == [], ("conformance.* names the docs mention that no module defines (read from the source): "
                           "rename them in the doc or define them\n" + "\n".join(missing))


def test_every_option_in_the_docs_is_defined():
    missing = [f"{where}: {option}" for where, option in _mentions(OPTION) if option not in _code_strings()]
    assert missing == [], ("options the docs mention that no code defines: fix the doc or add the option\n"
                           + "\n".join(missing))


def test_every_check_id_in_the_docs_is_registered():
    ids = {spec.id for spec in registered()}
    areas = {check_id.split(".")[0] for check_id in ids}
    named = [(where, text) for where, text in _mentions(TICKED)
             if text.split(".")[0] in areas and not text.endswith((".py", ".md", ".json"))]
    unknown = [f"{where}: {text}" for where, text in named if text not in ids and text not in NOT_CHECK_IDS]
    assert unknown == [], ("ids of a registered area the docs mention that are not registered check ids: fix the "
                           "doc, or list a request field in NOT_CHECK_IDS\n" + "\n".join(unknown))


@pytest.mark.parametrize("text,problem", [
    ("conformance/core/registry.py", None),
    ("tests/test_fault_table.py::test_table_shape", None),
    ("tests/test_fault_table.py::test_every_*", None),
    ("captured/<client>/<version>/default.json", None),
    ("captured/CLIENT/OLD", None),
    ("conformance/checks/catalog.py", "no such file or folder"),
    ("tests/test_fault_table.py::test_no_such_thing", "tests/test_fault_table.py defines no test_no_such_thing"),
    ("fixtures/peers/<stack>.yaml", "no file matches fixtures/peers/*.yaml"),
])
def test_path_rule(text, problem):
    assert _path_problem(text) == problem


@pytest.mark.parametrize("name,resolves", [
    ("conformance.core.registry", True),
    ("conformance.core.registry.check", True),
    ("conformance.layers.attribution.Attribution.evidence", True),
    ("conformance.net.transport.Limits.response_bytes", True),
    ("conformance.net.transport.Limits.no_such_field", False),
    ("conformance.wire.dialect.api_for_path", False),
    ("conformance.checks.catalog", False),
])
def test_name_rule(name, resolves):
    assert _name_resolves(name) is resolves
