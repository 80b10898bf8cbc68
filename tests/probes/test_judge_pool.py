"""Judging load exchanges in worker processes (conformance.probes.judge_pool): the same verdicts
as in the probe's own process, and a level of many requests still fails with the right check."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conformance.net.transport import RawExchange
from conformance.probes import judge_pool
from conformance.probes.common import build_request, run_sync
from conformance.probes.load import run_level
from conformance.probes.workload import WorkItem

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "streams"
WIRE = {"anthropic": "anthropic", "openai": "openai"}


def _fixture_exchanges() -> list[tuple[str, RawExchange, dict, str]]:
    """Every bundled stream fixture (valid and invalid), whole and cut into 7-byte chunks."""
    out = []
    for fx in json.loads((STREAMS / "index.json").read_text())["fixtures"]:
        body = (STREAMS / fx["file"]).read_bytes()
        stream = fx["kind"] == "stream"
        request = {"model": "m", "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        for cut in (len(body) or 1, 7):
            chunks = [(i * 1e-4, body[i:i + cut]) for i in range(0, len(body), cut)]
            raw = RawExchange("POST", "http://x/v1", {}, b"", status=fx.get("status", 200),
                              response_headers={"content-type": "text/event-stream" if stream else "application/json"},
                              chunks=chunks, deadline_total=60.0)
            out.append((f"{fx['file']}/{cut}", raw, request, WIRE[fx["protocol"]]))
    return out


def test_a_worker_process_gives_the_verdict_the_probes_own_process_gives():
    from conformance.wire.registry import dialect

    cases = _fixture_exchanges()
    assert len(cases) > 40

    async def both():
        judge = judge_pool.Judge(processes=True)
        assert await asyncio.to_thread(judge_pool.start), "worker processes must start on this machine"
        remote = await asyncio.gather(*(judge(raw, req, dialect(wire)) for _, raw, req, wire in cases))
        return remote

    remote = run_sync(both())
    local = [judge_pool.judge_record(raw, req, wire) for _, raw, req, wire in cases]
    assert [v for v, _ in local if v], "the fixtures include invalid streams: some verdicts must carry violations"
    for (name, *_), (lv, lt), (rv, rt) in zip(cases, local, remote, strict=True):
        assert [x.to_dict() for x in rv] == [x.to_dict() for x in lv], name
        assert rt == lt, name


@pytest.mark.parametrize("faults, failing_check", [((), None),
                                                   (("stop-sequence-missing",), "anthropic.stream.stop_sequence_present")])
def test_a_level_judged_in_processes_passes_the_conformant_engine_and_names_the_fault(engine, make_target, faults,
                                                                                      failing_check):
    t = make_target(engine(*faults))
    items = [WorkItem("short", build_request(t, "Say hello.", max_tokens=16))]
    stats = run_sync(run_level(t, items, 8, rounds=judge_pool.PROCESSES_FROM // 8, progress=lambda line: None))
    assert len(stats.records) + stats.skipped == judge_pool.PROCESSES_FROM
    assert judge_pool.running(), "a level of PROCESSES_FROM requests judges in worker processes"
    if failing_check is None:
        assert stats.ok, [r.violations for r in stats.failures][:2]
    else:
        assert not stats.ok
        assert failing_check in {v.check_id for r in stats.failures for v in r.violations}
