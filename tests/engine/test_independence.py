"""The reference engine shares no code with the judge: it imports only the standard library,
aiohttp and conformance.engine.* (plus conformance.core.paths to find the bundled scenarios)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import conformance.engine

ENGINE_DIR = Path(conformance.engine.__file__).parent
FORBIDDEN = ("conformance.wire", "conformance.net", "conformance.checks")
ALLOWED_CONFORMANCE = ("conformance.engine", "conformance.core.paths")
ALLOWED_THIRD_PARTY = ("aiohttp",)


def _imports(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield "conformance.engine." + (node.module or "")
            elif node.module == "conformance":
                for a in node.names:
                    yield f"conformance.{a.name}"
            else:
                yield node.module or ""


def test_engine_imports_no_judge_code():
    bad = []
    for py in sorted(ENGINE_DIR.rglob("*.py")):
        for mod in _imports(py):
            top = mod.split(".")[0]
            if mod.startswith(FORBIDDEN):
                bad.append(f"{py.name}: {mod}")
            elif top == "conformance" and not mod.startswith(ALLOWED_CONFORMANCE):
                bad.append(f"{py.name}: {mod} (only conformance.engine.* may be imported)")
            elif top != "conformance" and top not in sys.stdlib_module_names and top not in ALLOWED_THIRD_PARTY:
                bad.append(f"{py.name}: {mod} (third-party: only aiohttp)")
    assert not bad, "the reference engine must not share code with the judge:\n" + "\n".join(bad)


def test_running_the_engine_loads_no_judge_module():
    code = (
        "import sys\n"
        "from conformance.engine.launch import serve_engine_in_thread\n"
        "import httpx\n"
        "with serve_engine_in_thread() as url:\n"
        "    httpx.post(url + '/v1/messages', json={'model': 'm', 'max_tokens': 5, 'stream': True,"
        " 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        f"bad = [m for m in sys.modules if m.startswith({FORBIDDEN!r})]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
