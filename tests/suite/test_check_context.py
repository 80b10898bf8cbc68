"""CheckContext applies attribution: through a router that answers with another model (the
reference router's `wrong-model` fault) in front of the correct reference engine, a failing test's
records carry `layer: router` and the attribution details, its failure folder the evidence and
its failure text the `layer:` line; the exchange the context judged is not judged again."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conformance.core.results import read_results
from conformance.engine.launch import serve_engine_in_thread
from conformance.report.text import ConformanceFailure
from conformance.router.launch import serve_router_in_thread
from conformance.suite import check_context
from conformance.suite.check_context import CheckContext
from conformance.suite.config import SuiteConfig
from conformance.suite.session import SuiteSession
from conformance.wire import ANTHROPIC

BODY = {"model": "reference-model", "max_tokens": 32, "stream": False,
        "messages": [{"role": "user", "content": "Say hi to the wrong model."}]}


@dataclass
class Item:
    """The part of a pytest item a CheckContext reads."""

    path: Path
    name: str = "test_wrong_model"
    originalname: str = "test_wrong_model"
    user_properties: list = field(default_factory=list)


def test_a_failing_test_through_a_router_is_attributed_and_the_context_applies_it(tmp_path, monkeypatch):
    judged = []
    real = check_context.check_exchange

    def counting(raw, request, **kw):
        judged.append(request)
        return real(raw, request, **kw)

    monkeypatch.setattr(check_context, "check_exchange", counting)
    with serve_engine_in_thread() as engine, serve_router_in_thread(engine, faults=("wrong-model",)) as router:
        config = SuiteConfig(target=router, engine_url=engine, report_dir=tmp_path / "reports", api_key="k")
        session = SuiteSession(config)
        ctx = CheckContext(Item(tmp_path / "test_x.py"), session, config)
        sent = ctx.send(ANTHROPIC.name, ANTHROPIC.generation_path, BODY)
        verdict = ctx.judge(sent, expect_model="reference-model")
        assert verdict.failed_checks == ["identity.model_matches"]
        with pytest.raises(ConformanceFailure) as failure:
            ctx.finish()
    assert len(judged) == 1  # attribution used the context's verdict: the exchange was judged once
    assert ctx.extra["layer"].startswith("router — introduced by the router"), ctx.extra
    assert "router" in str(failure.value)
    records = read_results(tmp_path / "reports" / "results")
    failed = [r for r in records if r.outcome == "failed"]
    assert failed and all(r.layer == "router" for r in failed)
    assert [a["layer"] for a in failed[0].details["attribution"]] == ["router"]
    assert all(not r.layer for r in records if r.outcome == "passed")
    folder = session.failure_dir(ctx.test_id)
    doc = json.loads((folder / "attribution-1.json").read_text(encoding="utf-8"))
    assert doc["layer"] == "router" and doc["replayed"] == "forwarded" and doc["target_violations"]
    assert (folder / "attribution-1.txt").read_text(encoding="utf-8").startswith("layer: router")
