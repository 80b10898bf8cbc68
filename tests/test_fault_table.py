"""The fault -> check table (fixtures/faults.json) against the fault catalog (docs/faults.md) and
the check registry.

- Every row of the catalog's table in docs/faults.md is in the JSON table's `rows` and nothing
  else is.
- The table's `found` rows are failures seen on a real stack that the catalog does not list (each
  names its source); none of them may be a catalog row (once the catalog lists one, it moves to
  `rows`). Everything below holds for them as for `rows`.
- Every check id the table names is registered (the whole catalog loaded); every row names an
  issue whose module exists.
- Each row's fault modes exist in the reference engine / reference router fault lists.
- Each fault name is written once, in its double's faults.py (engine/faults.py, router/faults.py):
  every other module of the doubles uses the constant, never the string.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest

from conformance.core.paths import fixtures_dir
from conformance.core.registry import registered
from conformance.engine.faults import FAULTS
from conformance.router.faults import ROUTER_FAULTS

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "docs" / "faults.md"
TABLE = json.loads((fixtures_dir() / "faults.json").read_text(encoding="utf-8"))
ROWS = TABLE["rows"]
FOUND = TABLE.get("found", [])

# The module that registers each issue's check ids.
ISSUE_MODULE = {
    2: "conformance.wire.anthropic",
    4: "conformance.checks.suite",
    7: "conformance.checks.translation",
    9: "conformance.checks.context",
    14: "conformance.wire.responses",
    16: "conformance.checks.client_wire",
    27: "conformance.checks.load",
}


def _catalog_rows() -> list[str]:
    """The ids of the catalog's table: the lines that follow its `| id | ...` header."""
    lines = CATALOG.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*id\s*\|", line))
    ids = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        m = re.match(r"^\|\s*([a-z0-9][a-z0-9-]+)\s*\|", line)
        if not m:
            break
        ids.append(m.group(1))
    return ids


def test_table_shape():
    assert TABLE["format"] == "conformance.fault-table" and TABLE["version"] == 1
    seen = set()
    for row in ROWS + FOUND:
        assert row["fault"] not in seen, f"duplicate row {row['fault']}"
        seen.add(row["fault"])
        assert row["checks"], f"{row['fault']}: no check catches it"
        assert set(row["modes"]) <= {"engine", "router"} and row["modes"], row
        assert row["issue"] in ISSUE_MODULE, f"{row['fault']}: issue {row['issue']} has no module listed here"
    for row in FOUND:
        assert isinstance(row.get("source"), str) and row["source"].strip(), f"{row['fault']}: a found row names its source"


def test_every_catalog_row_is_in_the_table():
    catalog = _catalog_rows()
    assert len(catalog) >= 20, "docs/faults.md: the catalog's table was not found or not parsed"
    assert len(set(catalog)) == len(catalog), "docs/faults.md lists a fault twice"
    table = [r["fault"] for r in ROWS]
    assert sorted(set(catalog) - set(table)) == [], "docs/faults.md rows missing from fixtures/faults.json"
    assert sorted(set(table) - set(catalog)) == [], "fixtures/faults.json rows that docs/faults.md does not list"
    listed = sorted({r["fault"] for r in FOUND} & set(catalog))
    assert listed == [], f"found rows that docs/faults.md lists now: move them to rows: {listed}"


def test_every_check_id_is_registered_and_every_issue_module_exists():
    ids = {spec.id for spec in registered()}
    missing = {row["fault"]: [c for c in row["checks"] if c not in ids] for row in ROWS + FOUND}
    assert {fault: checks for fault, checks in missing.items() if checks} == {}, \
        "check ids in the fault table that no module registers"
    assert [m for m in ISSUE_MODULE.values() if importlib.util.find_spec(m) is None] == []


def test_fault_modes_exist_in_the_reference_engine_and_router():
    absent = [r["fault"] for r in ROWS + FOUND if "engine" in r["modes"] and r["fault"] not in FAULTS]
    assert absent == [], f"engine-mode rows with no engine fault: {absent}"
    absent = [r["fault"] for r in ROWS + FOUND if r["modes"] == ["router"] and r["fault"] not in ROUTER_FAULTS]
    assert absent == [], f"router-only rows with no router fault: {absent}"


@pytest.mark.parametrize("double,names", [("engine", FAULTS), ("router", ROUTER_FAULTS)])
def test_each_fault_name_is_written_once_in_its_doubles_faults_module(double, names):
    written: dict[str, list[str]] = {}
    for path in sorted((ROOT / "conformance" / double).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                written.setdefault(node.value, []).append(f"{path.name}:{node.lineno}")
    assert {name: places for name, places in written.items() if places != [places[0]]} == {}
    assert {name: places for name, places in written.items() if not places[0].startswith("faults.py:")} == {}
    assert set(written) == set(names)
