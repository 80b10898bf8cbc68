"""`conformance checks`: every check with its scope and what it judges beside its id and title."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.cli import main
from conformance.core import registry

REPO = Path(__file__).resolve().parents[2]


def test_the_table_shows_scope_and_judges_beside_id_and_title(capsys):
    assert main(["checks", "--area", "tools"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "scope", "judges", "title"]
    specs = [s for s in registry.registered() if s.id.startswith("tools")]
    assert len(lines) == 1 + len(specs)
    title_at = lines[0].index("title")
    for line, spec in zip(lines[1:], specs, strict=True):
        assert line.split()[:3] == [spec.id, spec.scope, spec.judges], line
        assert line[title_at:].startswith(spec.title), line
    cut = next(line for line in lines if line.startswith("tools.call_cut "))
    assert cut.split()[1:3] == ["exchange", "model"] and cut.endswith("[warning]")


def test_json_gives_every_fact_but_the_code(capsys):
    assert main(["checks", "--json", "--area", "suite.request"]) == 0
    [doc] = json.loads(capsys.readouterr().out)
    assert doc["id"] == "suite.request.accepted" and doc["scope"] == "exchange" and doc["judges"] == "stack"
    assert doc["title"] == registry.get("suite.request.accepted").title
    assert "run" not in doc and "applies" not in doc


def test_docs_checks_md_lists_every_check_with_what_it_judges():
    """docs/checks.md holds `conformance checks --markdown`: every registered id with its judges
    (stack or model); regenerate its table with that command when a check is added or changed.
    A fresh process: other tests register toy checks (a fourth wire) in this one."""
    out = subprocess.run([sys.executable, "-m", "conformance.cli", "checks", "--markdown"], capture_output=True,
                         text=True, check=True, cwd=REPO, timeout=60).stdout
    table = out.strip().splitlines()
    doc = (REPO / "docs" / "checks.md").read_text(encoding="utf-8").splitlines()
    start = doc.index(table[0])
    assert doc[start:start + len(table)] == table, "docs/checks.md is stale: paste `conformance checks --markdown`"
    judged = {line.split("`")[1]: line.split("|")[2].strip() for line in table[2:]}
    assert judged["client_wire.parallel_calls.all_survive"] == "model"
    assert set(judged.values()) == {"stack", "model"}
