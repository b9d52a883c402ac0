"""What the reports show is escaped (issue 36, item 5).

A graph whose set, feature and node names hold HTML and terminal escape sequences is
sampled; its output is read by `sample-stats` (the HTML page), `sample-inspect`,
`sample-check` and `sample` itself, and a crafted `sample_report.json` is read by
`sample-stats`. No markup reaches the page unescaped, the page forbids scripts by its
Content-Security-Policy, and no control character reaches the terminal."""
import html.parser
import json
import os

import pytest

from pipelines import inspect_output, sample, sample_check, sample_stats
from sampler.output import stats_report

SCRIPT = "<script>alert(1)</script>"
ESC = "\x1b]0;owned\x07\x1b[2J"  # set the terminal's title, clear the screen
NODE_SET = "<img src=x onerror=alert(1)>"
FEATURE = "<script>f</script>"
OP = "h$^{$x"  # matplotlib would read it as math, and fail
NAME_ID = "n<b>" + ESC


@pytest.fixture(scope="module")
def crafted_output(tmp_path_factory):
    root = tmp_path_factory.mktemp("crafted")
    graph = root / "graph"
    graph.mkdir()
    (graph / "graph_schema.pbtxt").write_text(
        f'node_sets {{ key: "{NODE_SET}" value {{ features {{ key: "{FEATURE}" value '
        f'{{ dtype: DT_STRING }} }} metadata {{ filename: "u.csv" }} }} }}\n'
        f'edge_sets {{ key: "e{SCRIPT}" value {{ source: "{NODE_SET}" target: "{NODE_SET}" '
        f'metadata {{ filename: "e.csv" }} }} }}\n'.replace("\x1b", "\\x1b").replace(
            "\x07", "\\x07"))
    rows = [("u1", SCRIPT), (NAME_ID, "x" + ESC), ("u3", "<i>")]
    (graph / "u.csv").write_text("id,f\n".replace("f", '"' + FEATURE + '"') + "".join(
        f'"{i}","{v}"\n' for i, v in rows))
    (graph / "e.csv").write_text(f'source,target\nu1,"{NAME_ID}"\n"{NAME_ID}",u3\nu3,u1\n')
    (graph / "spec.pbtxt").write_text(
        f'seed_op {{ op_name: "s{SCRIPT}" node_set_name: "{NODE_SET}" }}\n'
        f'sampling_ops {{ op_name: "{OP}" input_op_names: "s{SCRIPT}" edge_set_name: '
        f'"e{SCRIPT}" sample_size: 2 strategy: RANDOM_UNIFORM }}\n')
    (graph / "seeds.csv").write_text(f'id\nu1\n"{NAME_ID}"\nu3\n"missing{SCRIPT}{ESC}"\n')
    out = root / "out"
    assert sample.main(["--graph", str(graph), "--spec", str(graph / "spec.pbtxt"),
                        "--seeds", str(graph / "seeds.csv"), "--output", str(out),
                        "--quiet"]) == 0
    return graph, out


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.metas = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "meta":
            self.metas.append(dict(attrs))


def _page(folder, capsys):
    assert sample_stats.main([str(folder), "--workers", "1", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out and "\x07" not in out, out
    page = (folder / "stats" / "index.html").read_text()
    parser = _Tags()
    parser.feed(page)
    return page, parser


def test_sample_stats_escapes_every_value(crafted_output, capsys):
    _, out = crafted_output
    page, parser = _page(out, capsys)
    assert set(parser.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2",
                                "h3", "table", "tr", "th", "td", "code", "p", "div", "img",
                                "span", "br"}, set(parser.tags)
    assert "<script" not in page.lower() and "onerror=alert" not in page.replace(
        "&lt;img src=x onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text
    csp = [m for m in parser.metas if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0]["content"] == stats_report.CSP and "script-src" not in csp[0][
        "content"] and "default-src 'none'" in csp[0]["content"]


def test_a_crafted_run_report_is_escaped_and_never_crashes(crafted_output, capsys, tmp_path):
    """Issue 36: values of sample_report.json went into index.html unescaped."""
    import shutil
    _, out = crafted_output
    folder = tmp_path / "out"
    shutil.copytree(out, folder)
    report = json.loads((folder / "sample_report.json").read_text())
    report.update({"missing_seed_ids": [SCRIPT, 7, None], "seeds_read": SCRIPT,
                   "seeds_missing": "<b>many</b>", "subgraphs_written": [SCRIPT],
                   "draws_per_op": {f"op{SCRIPT}": "<i>lots</i>", OP: 3},
                   "edges_sampled_per_op": {f"op{SCRIPT}": 1, OP: f"{SCRIPT}"},
                   "draws_at_cap_per_op": [SCRIPT]})
    (folder / "sample_report.json").write_text(json.dumps(report))
    page, parser = _page(folder, capsys)
    assert "<script" not in page.lower() and "<b>many" not in page and "<i>lots" not in page
    assert "&lt;script&gt;" in page
    stats = json.loads((folder / "stats" / "stats.json").read_text())
    assert stats["run_report"]["missing_seed_ids"] == [SCRIPT, "7", "None"]
    assert "seeds_read" not in stats["run_report"]  # not a count: left out


def test_sample_inspect_escapes_control_characters(crafted_output, capsys):
    _, out = crafted_output
    for flags in ([], ["--max-items", "0"], ["--dot"], ["--json"],
                  ["--seed-id", NAME_ID]):
        for index in range(3):
            code = inspect_output.main([str(out), "--index", str(index), *flags])
            text, err = capsys.readouterr()
            assert code == 0, err
            assert not any(c in text for c in "\x1b\x07\r"), (flags, text)
    inspect_output.main([str(out), "--seed-id", NAME_ID])
    text = capsys.readouterr().out
    assert "n<b>\\x1b]0;owned\\x07\\x1b[2J" in text  # shown, escaped


def test_sample_and_sample_check_print_no_control_characters(crafted_output, capsys,
                                                             tmp_path):
    graph, out = crafted_output
    assert sample_check.main([str(out)]) == 0
    text, _ = capsys.readouterr()
    assert "\x1b" not in text
    code = sample.main(["--graph", str(graph), "--spec", str(graph / "spec.pbtxt"),
                        "--seeds", str(graph / "seeds.csv"), "--output", str(tmp_path / "o")])
    text, err = capsys.readouterr()
    assert code == 0 and "missing<script>alert(1)</script>\\x1b]0;owned\\x07" in text
    assert "\x1b" not in text + err and "\x07" not in text + err
    assert sample.main(["--graph", str(graph), "--spec", str(graph / "spec.pbtxt"),
                        "--dry-run"]) == 0
    assert "\x1b" not in capsys.readouterr().out
