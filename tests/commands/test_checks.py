"""`conformance checks`: every check with its scope and what it judges beside its id and title."""

from __future__ import annotations

import json

from conformance.cli import main
from conformance.core import registry


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
