"""The HTML report is one self-contained page that loads in a real headless Chromium.

The browser test needs Debian's chromium (/usr/bin/chromium) and Python playwright (no downloaded
browser); it skips with a reason where either is absent. The screenshot is kept as an artefact under
$ROUNDOFF_ARTIFACTS when set, else in pytest's tmp dir.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from roundoff.report.html import plot_series, render_html

CHROMIUM = os.environ.get("ROUNDOFF_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_page_is_self_contained(sample_document):
    page = render_html(sample_document)
    # No network at view time: no external scripts, stylesheets or images.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)\s*=", page), "repro: render_html(doc)"
    assert "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js is inlined
    for text in (
        "inductor-gpu",
        "model.py:12",
        "fma_cancellation",
        "contract_fma = false",
        "exp of the FMA-kept rounding error",
    ):
        assert text in page, f"{text!r} missing; repro: render_html(sample_document)"


def test_user_text_is_escaped(sample_document):
    sample_document["target"] = "<script>alert(1)</script>.py:f"
    page = render_html(sample_document)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_nonfinite_errors_are_plotted_at_a_ceiling_above_the_finite_ones(sample_document):
    gpu, eager = plot_series(sample_document)
    assert gpu["x"] == ["n2", "n3", "n4"] and eager["name"] == "eager"
    assert gpu["y"][2] == pytest.approx(30.2 + 2.0) and "inf" in gpu["text"][2]
    assert gpu["bad"] == [None, None, "#c5221f"] and eager["bad"] == [None] * 3


def test_nan_node_with_finite_bits_is_still_plotted_at_the_ceiling(sample_document):
    # analyze leaves NaN elements out of the ulp figures: the verdict is what marks the node
    node = sample_document["runs"][1]["nodes"][0]
    node["verdict"] = "nonfinite"
    node["metrics"]["nan"] = 3
    _, eager = plot_series(sample_document)
    assert eager["y"][0] == pytest.approx(30.2 + 2.0) and "NaN: 3" in eager["text"][0]


def _real_document() -> dict:
    """A real check of softmax-backward (NaN gradient) with blame, as the CLI makes it."""
    from roundoff.cli.checking import check_document
    from roundoff.cli.loading import load_target
    from roundoff.policy import get_policy

    loaded = load_target("zoo:softmax-backward")
    policies = [get_policy("inductor-gpu"), get_policy("inductor-emulate")]
    return check_document(loaded, policies, "eager", with_blame=True, nodes="all")  # per-node plot lines


@pytest.mark.browser
@pytest.mark.parametrize("which", ["sample", "softmax-backward"])
def test_page_loads_in_headless_chromium(sample_document, tmp_path, which):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    doc = sample_document if which == "sample" else _real_document()
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(doc), encoding="utf-8")
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            page.wait_for_selector("#error-plot .main-svg", timeout=15_000)
            traces = page.locator("#error-plot .scatterlayer .trace").count()
            verdict = page.locator("#verdict").inner_text()
            node_rows = page.locator("section.run table.nodes tr").count()
            groups = page.locator("table.groups").count()
            hazards = page.locator("table.hazards tr.hazard").count()
            blame_rows = page.locator("table.blame tr").count()
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    keep = os.environ.get("ROUNDOFF_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / f"report-{which}.png")
    assert errors == [], f"console errors: {errors}; repro: open {page_path}"
    assert [u for u in requests if not u.startswith("file:")] == [], "page fetched the network"
    assert traces == 2, f"expected one plot line per policy, got {traces}; open {page_path}"
    assert verdict == doc["verdict"] == "diverges"
    runs = doc["runs"]
    assert node_rows == sum(len(r["nodes"]) + 1 for r in runs)  # plus one header row per run
    assert groups == sum(1 for r in runs if r["groups"])
    assert hazards == sum(len(r["hazards"]) for r in runs) > 0
    assert blame_rows == sum(len(r["blame"]["changes"]) + 1 for r in runs if r["blame"]) > 0
    assert shot.stat().st_size > 10_000


def test_outputs_table_shows_each_outputs_multiple_of_its_reference_not_the_limit(sample_document):
    """Trial 49: the outputs table's "multiplier" column showed the rule's limit (16) on every row, so a
    failing gradient (69.6x) and a passing one (1x) differed only in the verdict word."""
    from roundoff.report.json_report import output_entry

    run = sample_document["runs"][0]
    run["outputs"] = [output_entry("grad_w", "diverges", 6.96e-4, 1e-5, 16.0),
                      output_entry("grad_b", "ok", 1e-5, 1e-5, 16.0),
                      output_entry("grad_c", "diverges", 16.013e-5, 1e-5, 16.0),  # not "16": beyond it
                      output_entry("loss", "ok", 0.0, 0.0, 16.0)]
    page = render_html(sample_document)
    table = page[page.index('<table class="outputs">'):]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td>(\w+)</td><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td>", table)
    assert rows == [("grad_w", "69.6"), ("grad_b", "1"), ("grad_c", "16.01"), ("loss", "-")], rows
    assert "x reference (limit 16)" in table


def test_a_screened_run_is_named_instead_of_drawn(sample_document):
    """Trial 77: a passing screened check examines no node, so its page drew an empty line (one line
    for two policies) with no word why. Oracle: the real check's document, whose screened run has no
    node figures, beside the sample's per-node runs."""
    from roundoff.cli.checking import check_document
    from roundoff.cli.loading import load_target
    from roundoff.policy import get_policy

    screened = check_document(load_target("zoo:fma-cancel"), [get_policy("eager")], "oracle")
    assert [r["nodes"] for r in screened["runs"]] == [[]] and screened["verdict"] == "ok"
    page = render_html(screened)
    assert 'id="unplotted"' in page and "Not drawn: eager" in page and "--every-node" in page
    assert 'id="error-plot"' not in page
    drawn = render_html(sample_document)  # every run has its nodes: drawn, nothing named
    assert 'id="error-plot"' in drawn and 'id="unplotted"' not in drawn
    sample_document["runs"][1]["nodes"] = []  # one run screened beside one that was not
    both = render_html(sample_document)
    assert 'id="error-plot"' in both and "Not drawn: eager:" in both
