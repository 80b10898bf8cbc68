"""The reference router shares no code with the judge (the engine's side: tests/engine/test_independence.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROUTER_DIR = Path(__file__).resolve().parents[2] / "conformance" / "router"


def test_router_never_imports_the_judge():
    """An ALLOWLIST: the router's files import only the standard library, aiohttp,
    conformance.router.* and conformance.core.paths (whose package __init__s import nothing:
    tests/engine/test_independence.py asserts that). Every import counts, also inside a function."""
    allowed_conformance = ("conformance.router", "conformance.core.paths")
    allowed_third_party = ("aiohttp",)
    bad = []
    for path in sorted(ROUTER_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: inside conformance.router
                    names = ["conformance.router" + ("." + node.module if node.module else "")]
                elif node.module == "conformance":
                    names = [f"conformance.{a.name}" for a in node.names]
                else:
                    names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "conformance":
                    ok = any(name == a or name.startswith(a + ".") for a in allowed_conformance)
                else:
                    ok = top in sys.stdlib_module_names or top in allowed_third_party
                if not ok:
                    bad.append(f"{path.name}:{node.lineno}: {name}")
    assert not bad, ("the router must not share code with the judge: it imports only the standard library, "
                     f"{', '.join(allowed_third_party)} and {', '.join(allowed_conformance)}:\n" + "\n".join(bad))
