"""report.html tested like a page (marker `browser`, opt-in; .ci/run installs Debian's `chromium`):
headless Chromium opens the file from disk, runs its script, and the DOM it dumps has the matrix
with check names, the failure named in the URL's #fragment opened, and the plots drawn; a
screenshot is kept under reports/browser/ as a CI artifact; at fixed widths (1400, 1000 px) the page is measured
by Chromium itself: the headline, check names one upright line each, no horizontal overflow of the page.

With the marker selected and no Chromium, the test fails (a skipped browser test would hide that
the page was never looked at). Nothing downloads a browser: the binary is CONFORMANCE_CHROMIUM or
`chromium` on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.plugin import SUITE_DIR
from tests.report.conftest import SMALL, conformance_run

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "reports" / "browser"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run")


def chromium() -> str:
    binary = os.environ.get("CONFORMANCE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        pytest.fail("the browser test needs Chromium and none was found: install the Debian package "
                    "(`apt-get install -y chromium`, as .ci/run does) or set CONFORMANCE_CHROMIUM to its binary",
                    pytrace=False)
    return binary


def _browse(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=180)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """A real run with a failure and figures: an engine that advertises twice the context it
    accepts (context.advertised_matches fails; the load and needle figures are still drawn)."""
    cwd = tmp_path_factory.mktemp("browse")
    proc = conformance_run(cwd, "--fault", "advertised-context-wrong", f"--conformance-captures={SMALL}",
                           str(SUITE_DIR / "test_replay.py"), str(SUITE_DIR / "test_load.py"),
                           str(SUITE_DIR / "test_context.py"), "-m", "load or context or not slow",
                           "-p", "no:cacheprovider")
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-3000:]
    html = cwd / "reports" / "report.html"
    assert html.is_file()
    return html


def test_chromium_draws_the_matrix_a_failure_and_the_plots(page, tmp_path):
    binary = chromium()
    proc = _browse(binary, tmp_path / "profile", "--dump-dom", page.as_uri() + "#f-1")
    dom = proc.stdout
    assert proc.returncode == 0 and "<html" in dom, proc.stderr[-2000:]
    # the page's script ran (it marks the body) and opened the failure the fragment names
    assert re.search(r'<body[^>]*data-ready="1"', dom)
    opened = re.search(r'<details class="failure" id="f-1" open="[^"]*">(.*?)</details>', dom, re.S)
    assert opened, "the failure named by #f-1 is not open"
    for part in ("expected", "seen", "where", "likely cause", "replay", "curl", "failure folder"):
        assert f"<dt>{part}</dt>" in opened.group(1), part
    # the matrix, by check names grouped by area
    assert '<div id="matrix"' in dom and '<th class="area"' in dom
    assert "<span>advertised_matches</span>" in dom and "<span>request.accepted</span>" in dom
    assert re.search(r'<td class="failed"[^>]*><a href="#f-\d+"', dom)
    # the plots: drawn lines and cells, not empty frames
    plots = dict(re.findall(r'<svg class="plot" data-plot="([^"]+)"(.*?)</svg>', dom, re.S))
    assert {"throughput", "ttft", "needle", "interference", "context"} <= set(plots), sorted(plots)
    assert "<polyline" in plots["throughput"] and plots["ttft"].count("<polyline") == 2
    assert plots["needle"].count('class="cell"') >= 4
    # the screenshot a person (or CI) looks at
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    proc = _browse(binary, tmp_path / "profile2", "--window-size=1400,2200", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    shutil.copy(page, ARTIFACTS / "report.html")


def test_missing_chromium_fails_not_skips(pytester):
    pytester.makepyfile(test_it=f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
os.environ["PATH"] = ""
os.environ.pop("CONFORMANCE_CHROMIUM", None)
from tests.report.test_browser import chromium

def test_needs_it():
    chromium()
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "apt-get install -y chromium" in result.stdout.str()


# Measured in the page by Chromium itself: a copy of the report with this script appended (the
# page allows inline scripts; the report's own file is not changed) writes what it sees into
# the body's data-measure attribute, which --dump-dom returns.
MEASURE = """<script>
(function(){
  var doc=document.documentElement, heads=[], rows=[];
  document.querySelectorAll('th.check span').forEach(function(s){var r=s.getBoundingClientRect();
    heads.push([s.textContent, Math.round(r.width), Math.round(r.height)]);});
  document.querySelectorAll('th.row').forEach(function(t){rows.push(Math.round(t.getBoundingClientRect().height));});
  var line=parseFloat(getComputedStyle(document.querySelector('th.check span')).lineHeight)||16;
  document.body.setAttribute('data-measure', JSON.stringify({scroll:doc.scrollWidth, client:doc.clientWidth,
    headline:Array.from(document.querySelectorAll('#headline li')).map(function(l){return l.textContent;}),
    heads:heads, rows:rows, line:line}));
})();
</script>"""


@pytest.mark.parametrize("width", [1400, 1000])
def test_the_page_reads_at_a_fixed_width(page, tmp_path, width):
    import json

    binary = chromium()
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    proc = _browse(binary, tmp_path / "profile", f"--window-size={width},1200", "--virtual-time-budget=5000",
                   "--dump-dom", measured.as_uri())
    found = re.search(r'data-measure="([^"]*)"', proc.stdout)
    assert found, proc.stderr[-2000:]
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    # the headline: one verdict per client x wire, in words
    # (the fault breaks the context probe, which is the suite's own request; the clients' captures pass)
    assert "the suite's own requests on this stack (anthropic): broken — 1 cause" in m["headline"], m["headline"]
    assert "Claude Code on this stack (anthropic): works" in m["headline"], m["headline"]
    # no horizontal overflow of the page: a wide table scrolls inside its own box
    assert m["scroll"] <= m["client"], f"the page is {m['scroll']} px wide in a {m['client']} px window"
    # every check name is one upright line (a rotated header one line wide), never broken letter by letter
    assert m["heads"]
    broken = [(name, w, h) for name, w, h in m["heads"] if w > 1.6 * m["line"] or h < 5 * len(name)]
    assert not broken, broken[:5]
    assert max(m["rows"]) <= 2 * m["line"] + 8, "a row name wraps"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"report-{width}.png"
    shot.unlink(missing_ok=True)
    proc = _browse(binary, tmp_path / "profile2", f"--window-size={width},1800", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
