"""report.html's opening: one verdict per client x wire, then the root causes with layer, evidence and fix.

Rules:
- Built only from the results record, through `conformance.report.causes` (the one grouping).
- One line per (client, wire) the run recorded, in the words a user asks in: "Claude Code on this
  stack (anthropic): broken — 3 causes". The verdict is the worst of that slice's records:
  broken (a failure), works with warnings, not verified (nothing passed: every verdict was
  unverifiable or skipped), works.
- A cause shows its layer, its evidence (the engine-direct result when an attribution made one)
  and its fix; at most `causes.MAX_SHOWN` of them, then how many more.
- Untrusted text (messages, model names) is escaped by the caller's `esc`, passed in, so this
  module has one escaping function, html.py's.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.clients.profile import known, profile
from conformance.core.results import Result
from conformance.report.causes import MAX_SHOWN, Cause, from_results

VERDICT_CLASS = {"broken": "failed", "works with warnings": "warning", "not verified": "unverifiable",
                 "works": "passed"}


def _who(client: str) -> str:
    if not client:
        return "the suite's own requests"
    return profile(client).display if known(client) else client


def verdict_of(records: list[Result]) -> str:
    outcomes = {r.outcome for r in records}
    if outcomes & {"failed", "error"}:
        return "broken"
    if "warning" in outcomes:
        return "works with warnings"
    if "passed" not in outcomes:
        return "not verified"
    return "works"


def slices(results: list[Result]) -> list[tuple[str, str, list[Result]]]:
    """(client, wire, records) for every client x wire the run recorded, in a stable order."""
    out: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        out.setdefault((r.client, r.api), []).append(r)
    return [(client, wire, recs) for (client, wire), recs in sorted(out.items())]


def headline_html(results: list[Result], esc: Callable[[object], str]) -> str:
    """The verdict lines, one per client x wire, as an HTML list (id "headline")."""
    items = []
    for client, wire, recs in slices(results):
        verdict = verdict_of(recs)
        causes = from_results(recs)
        tail = f" — {len(causes)} cause{'s' if len(causes) != 1 else ''}" if verdict == "broken" else ""
        on = f" ({wire})" if wire else ""
        items.append(f'<li class="{VERDICT_CLASS[verdict]}"><b>{esc(_who(client))}</b> on this stack{esc(on)}: '
                     f'<b class="verdict">{esc(verdict)}</b>{esc(tail)}</li>')
    if not items:
        return '<ul id="headline"><li>No results were recorded.</li></ul>'
    return '<ul id="headline">' + "".join(items) + "</ul>"


def cause_html(n: int, cause: Cause, esc: Callable[[object], str]) -> str:
    parts = [f'<div class="cause" id="cause-{n}"><div><b>{n}. {esc(cause.what)}</b></div><dl>']
    parts.append(f"<dt>layer</dt><dd>{esc(cause.layer or 'unattributed')}</dd>")
    if cause.evidence:
        parts.append(f"<dt>evidence</dt><dd>{esc(cause.evidence)}</dd>")
    parts.append(f"<dt>fix</dt><dd>{esc(cause.fix)}</dd>")
    parts.append(f"<dt>tests</dt><dd>{cause.count}</dd></dl></div>")
    return "".join(parts)


def causes_html(causes: list[Cause], esc: Callable[[object], str]) -> str:
    """The root causes, the most tests first (id "causes")."""
    if not causes:
        return '<div id="causes"><p>No failures.</p></div>'
    parts = ['<div id="causes">']
    parts += [cause_html(n, c, esc) for n, c in enumerate(causes[:MAX_SHOWN], 1)]
    if len(causes) > MAX_SHOWN:
        parts.append(f"<p>… and {len(causes) - MAX_SHOWN} more cause(s), listed with the failures below.</p>")
    parts.append("</div>")
    return "".join(parts)
