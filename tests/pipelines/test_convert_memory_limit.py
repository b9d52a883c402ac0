"""`unigraph-convert --format store --memory-limit SIZE` (issue 40): sizes as people write
them, one-line refusals, and a limit that changes no byte of the store."""
import argparse
import json
import os

import pytest

from pipelines import convert

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "mag_tiny")


@pytest.mark.parametrize("text,size", [("4G", 4 << 30), ("4GB", 4 << 30), ("4gib", 4 << 30),
                                       ("512M", 512 << 20), ("1.5G", 3 << 29),
                                       ("1000000", 1000000), (" 3 GiB ", 3 << 30),
                                       ("64k", 64 << 10)])
def test_sizes(text, size):
    assert convert.memory_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "4X", "-1G", "four", "1e9"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        convert.memory_size(text)


def test_a_bad_size_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "s"), "--format", "store",
                      "--memory-limit", "lots"])
    assert exit_.value.code == 2
    assert "--memory-limit: not a size: 'lots'" in capsys.readouterr().err


def test_a_limit_below_the_interpreters_is_refused(tmp_path, capsys):
    code = convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "s"), "--format",
                         "store", "--memory-limit", "100M"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--memory-limit 100 MB is too small" in err and "at least 384 MB" in err
    assert not os.path.exists(tmp_path / "s")


def test_the_limit_is_for_stores(tmp_path, capsys):
    code = convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "t"), "--format",
                         "csv", "--memory-limit", "1G"])
    assert code == 2 and "--memory-limit are for --format store" in capsys.readouterr().err


def test_any_limit_writes_the_same_store(tmp_path, capsys):
    for name, limit in (("small", ["--memory-limit", "384M"]), ("default", [])):
        assert convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / name),
                             "--format", "store", *limit]) == 0
    capsys.readouterr()
    manifests = []
    for name in ("small", "default"):
        with open(tmp_path / name / "store.json") as f:
            manifests.append(json.load(f)["files"])
    assert manifests[0] == manifests[1]
