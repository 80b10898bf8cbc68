"""The reference engine shares no code with the judge, as an ALLOWLIST: its files import only the
standard library, aiohttp, conformance.engine.* and conformance.core.paths (to find the bundled
scenarios). Importing conformance.core.paths also runs conformance/__init__.py and
conformance/core/__init__.py, so those two import nothing at all, and paths itself only the standard
library. Anything new the engine needs is written inside conformance/engine/ — the double must stay
independent of what it tests."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import conformance
import conformance.core
import conformance.core.paths
import conformance.engine

ENGINE_DIR = Path(conformance.engine.__file__).parent
ALLOWED_CONFORMANCE = ("conformance.engine", "conformance.core.paths")
ALLOWED_THIRD_PARTY = ("aiohttp",)
# what loading conformance.core.paths brings along (the package __init__s, which import nothing)
ALLOWED_LOADED = ("conformance", "conformance.core", "conformance.core.paths")


def _imports(path: Path, package: str):
    """(line, absolute module name) of every import in the file, module level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - (node.level - 1)])
                yield node.lineno, base + ("." + node.module if node.module else "")
            elif node.module == "conformance":
                for a in node.names:
                    yield node.lineno, f"conformance.{a.name}"
            else:
                yield node.lineno, node.module or ""


def _allowed(mod: str, own: tuple[str, ...], third_party: tuple[str, ...]) -> bool:
    top = mod.split(".")[0]
    if top == "conformance":
        return any(mod == a or mod.startswith(a + ".") for a in own)
    return top in sys.stdlib_module_names or top in third_party


def test_engine_imports_only_its_allowlist():
    bad = []
    for py in sorted(ENGINE_DIR.rglob("*.py")):
        package = "conformance." + ".".join(py.relative_to(ENGINE_DIR.parent).parent.parts)
        for line, mod in _imports(py, package):
            if not _allowed(mod, ALLOWED_CONFORMANCE, ALLOWED_THIRD_PARTY):
                bad.append(f"{py.relative_to(ENGINE_DIR.parent)}:{line}: {mod}")
    assert not bad, ("the reference engine imports only the standard library, "
                     f"{', '.join(ALLOWED_THIRD_PARTY)} and {', '.join(ALLOWED_CONFORMANCE)}:\n" + "\n".join(bad))


def test_what_the_doubles_may_load_imports_nothing_of_the_judge():
    for module in (conformance, conformance.core):
        found = [mod for _, mod in _imports(Path(module.__file__), module.__name__)]
        assert not found, f"{module.__file__} must import nothing (the doubles load it): {found}"
    paths = Path(conformance.core.paths.__file__)
    bad = [mod for _, mod in _imports(paths, "conformance.core") if not _allowed(mod, (), ())]
    assert not bad, f"conformance/core/paths.py imports only the standard library (the doubles load it): {bad}"


def test_running_the_engine_loads_no_judge_module():
    code = (
        "import sys\n"
        "from conformance.engine.launch import serve_engine_in_thread\n"
        "import httpx\n"
        "with serve_engine_in_thread() as url:\n"
        "    httpx.post(url + '/v1/messages', json={'model': 'm', 'max_tokens': 5, 'stream': True,"
        " 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] == 'conformance' and m not in {ALLOWED_LOADED!r}"
        " and m != 'conformance.engine' and not m.startswith('conformance.engine.')]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
