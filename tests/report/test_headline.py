"""report.html opens with one verdict per client x wire and the root causes (layer, evidence, fix);
the failures are grouped under their cause. Real runs of the suite (clean, and one engine fault)."""

from __future__ import annotations

import re

from conformance.core.results import Result, read_results
from conformance.report.headline import headline_html, verdict_of
from conformance.report.html import esc, render


def _headline(html: str) -> list[str]:
    block = re.search(r'<ul id="headline">(.*?)</ul>', html, re.S)
    assert block, "no headline"
    return [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li[^>]*>(.*?)</li>", block.group(1))]


def test_a_faulty_run_opens_with_broken_and_its_cause(faulty_run):
    results = read_results(faulty_run / "results")
    html = render(results, {"target": "t"})
    lines = _headline(html)
    assert "Claude Code on this stack (anthropic): broken — 1 cause" in lines, lines
    # the headline comes before everything else the page says
    assert html.index('id="headline"') < html.index('id="causes"') < html.index('id="header"') < html.index(
        'id="matrix"')
    cause = re.search(r'<div class="cause" id="cause-1">(.*?)</div></div>', html, re.S)
    assert cause and "anthropic.stream.stop_sequence_present" in cause.group(1)
    for part in ("layer", "fix", "tests"):
        assert f"<dt>{part}</dt>" in cause.group(1), part
    groups = re.findall(r'<h3 class="cause-group">(.*?)</h3>', html)
    assert groups and groups[0].startswith("1. anthropic.stream.stop_sequence_present failed on"), groups
    assert 'id="no-figures"' in html and "-m load" in html


def test_a_clean_run_says_works_and_names_the_model_that_answered(clean_run):
    results = read_results(clean_run / "results")
    html = render(results, {"target": "t"})
    assert all(line.endswith(": works") or line.endswith(": works with warnings") for line in _headline(html))
    answered = re.search(r"<td>answered by</td><td>(.*?)</td>", html)
    assert answered and answered.group(1) not in ("none", ""), answered


def test_nothing_answered_is_not_verified_and_answered_by_none():
    recs = [Result(test_id="t::a", check_id="suite.stream.incremental", outcome="unverifiable", api="anthropic",
                   client="claude-code", model="claude-opus-5-5")]
    assert verdict_of(recs) == "not verified"
    assert "Claude Code on this stack (anthropic): not verified" in _headline(headline_html(recs, esc))
    html = render(recs, {"target": "t"})
    assert re.search(r"<td>answered by</td><td>none</td>", html)
