"""The HTML report is self-contained and every figure in it decodes; plots stay readable
from one record to a million."""
import base64
import io
import os
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from sampler.output import stats_plots
from sampler.output.stats import folder_stats
from sampler.output.stats_report import render_html
from sampler.output.stats_summary import format_summary
IMG = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]*)\"")


@pytest.fixture(scope="module")
def runs(sampled_outputs, tmp_path_factory):
    a, b = sampled_outputs["demo"], sampled_outputs["demo_seed7"]
    bare = tmp_path_factory.mktemp("report") / "bare"
    shutil.copytree(a, bare)
    os.remove(bare / "sample_report.json")
    return {"a": folder_stats(a), "b": folder_stats(b), "bare": folder_stats(str(bare))}


def images(page: str) -> list[Image.Image]:
    """Every image the page references, decoded; fails on anything not an inline PNG."""
    sources = IMG.findall(page)
    decoded = []
    for source in sources:
        prefix = "data:image/png;base64,"
        assert source.startswith(prefix), f"not an inline PNG: {source[:60]}"
        data = base64.b64decode(source[len(prefix):], validate=True)
        image = Image.open(io.BytesIO(data))
        image.load()   # decodes every pixel
        assert image.format == "PNG" and image.width > 200 and image.height > 100
        decoded.append(image)
    return decoded


def assert_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)=\"(?!data:)", page), "references outside the page"
    assert "http://" not in page and "https://" not in page
    assert "url(" not in page


def figures_expected(stats) -> int:
    """A histogram per non-auxiliary set, per numeric feature, and of bytes per record."""
    sets = [n for n in stats.layout.node_sets + stats.layout.edge_sets if not n.startswith("_")]
    numeric = [f for f in stats.layout.features if not f.is_string]
    return len(sets) + len(numeric) + 1


def test_one_run_report_is_self_contained_with_every_figure(runs):
    page = render_html([("A", runs["a"])])
    assert_self_contained(page)
    found = images(page)
    assert len(found) == figures_expected(runs["a"]) + 1   # and the cap-hit rates
    for title in ('alt="histogram of nodes of paper per subgraph"', "Bytes per record",
                  'alt="histogram of values of nodes/paper.feat"',
                  "how often the cap was hit", "Features", "seed_id"):
        assert title in page


def test_two_runs_side_by_side(runs):
    page = render_html([("A", runs["a"]), ("B", runs["b"])])
    assert_self_contained(page)
    images(page)
    assert runs["a"].folder in page and runs["b"].folder in page
    # Every quantile row appears once per run.
    assert page.count("<td class=l>paper</td><td class=l>A</td>") == 1
    assert page.count("<td class=l>paper</td><td class=l>B</td>") == 1


def test_a_folder_without_run_report_says_so(runs):
    page = render_html([("A", runs["bare"])])
    assert "no <code>sample_report.json</code>" in page
    assert "cap-hit rate cannot be derived from the records" in page
    assert len(images(page)) == figures_expected(runs["bare"])   # no cap-rate figure
    assert "unknown (no sample_report.json)" in format_summary([("A", runs["bare"].as_dict())])


def test_text_summary_names_sets_and_ops(runs):
    text = format_summary([("A", runs["a"].as_dict()), ("B", runs["b"].as_dict())])
    assert "A: " in text and "B: " in text and "nodes per subgraph (A | B)" in text
    assert "paper->author" in text and "has_topic" in text


@pytest.mark.parametrize("records", [1, 1_000_000])
def test_histograms_for_one_to_a_million_records(records):
    rng = np.random.default_rng(0)
    skewed = np.minimum(rng.zipf(1.6, records), 50_000)   # heavy-tailed, with outliers
    figure = stats_plots.histogram_figure(
        "nodes per subgraph", "nodes (count)",
        [("A", skewed), ("B", skewed[: max(1, records // 2)])])
    axes = figure.axes[0]
    assert axes.get_title() and "(count" in axes.get_xlabel() and axes.get_ylabel()
    png = stats_plots.to_png(figure)
    assert Image.open(io.BytesIO(png)).format == "PNG"
    if records > 1:   # counts from 1 to ~600,000 per bin: both axes logarithmic
        assert axes.get_xscale() == "symlog" and axes.get_yscale() == "log"
        assert "log scale" in axes.get_xlabel() and "log scale" in axes.get_ylabel()
    if records > 1:
        edges, log_x = stats_plots._bins(skewed.astype(float), True)
        assert log_x and len(edges) <= stats_plots.LOG_BINS + 2


def test_runs_of_different_sizes_compare_as_shares():
    figure = stats_plots.histogram_figure("n", "nodes (count)", [("A", np.array([1, 2])),
                                                                 ("B", np.array([1, 1, 1, 2]))])
    axes = figure.axes[0]
    assert axes.get_ylabel() == "subgraphs (% of each run)"
    heights = [patch.get_data().values.tolist() for patch in axes.patches]
    assert heights == [[50.0, 50.0], [75.0, 25.0]]
    same = stats_plots.histogram_figure("n", "nodes (count)", [("A", np.array([1, 2])),
                                                               ("B", np.array([1, 1]))])
    assert same.axes[0].get_ylabel() == "subgraphs"


def test_bins_for_narrow_integer_ranges_are_one_per_value():
    edges, log_x = stats_plots._bins(np.array([3.0, 4, 4, 9]), True)
    assert not log_x and list(edges) == [2.5 + i for i in range(8)]


def test_cap_rate_figure_with_an_op_without_draws():
    figure = stats_plots.cap_rate_figure("cap", [("A", {"x": {"draws": 0, "draws_at_cap": 0,
                                                              "cap_hit_rate": None}})])
    assert "(%)" in figure.axes[0].get_xlabel()
    assert Image.open(io.BytesIO(stats_plots.to_png(figure))).format == "PNG"


def test_value_histogram_from_summary_buckets():
    values = np.array([1e-3, 2e-3, 5.0, 800.0])
    figure = stats_plots.value_histogram_figure("v", "value (DT_FLOAT)",
                                                [("A", values, np.array([1, 5, 100, 1]))],
                                                integer=False)
    axes = figure.axes[0]
    assert axes.get_xscale() == "log" and axes.get_ylabel() == "values"
    assert stats_plots.weighted_quantile(values, np.array([1.0, 5, 100, 1]), 0.5) == 5.0


def test_bytes_histogram_has_units():
    figure = stats_plots.histogram_figure("bytes", "size of one record (kB)",
                                          [("A", np.array([1500, 2500, 90000]))],
                                          integer=False, scale=1000.0)
    assert "(kB)" in figure.axes[0].get_xlabel()
