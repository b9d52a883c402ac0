"""The same job gives byte-identical records in-process and across worker processes.

multi_processing pickles the DoFns and ships every element between processes, as
Dataflow workers do; randomness derives from (seed, op, sample, node) only and every
order is canonical, so the records must not change.
"""
import os

from pipelines import sample
from tests.conftest import REPO_ROOT
from tests.pipelines.sampled_output import read_records

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def test_in_process_and_multi_processing_write_the_same_records(tmp_path):
    spec = os.path.join(DEMO, "sampling_spec.pbtxt")
    outputs = {}
    for name, flags in (("in_process", ["--direct_num_workers=1"]),
                        ("multi_processing", ["--direct_running_mode=multi_processing",
                                              "--direct_num_workers=2"]),
                        ("threads", ["--direct_running_mode=multi_threading",
                                     "--direct_num_workers=2"])):
        out = tmp_path / name
        assert sample.main(["--graph", DEMO, "--spec", spec, "--output", f"{out}/", "--quiet",
                            "--seed", "3", *flags]) == 0
        outputs[name] = read_records(str(out))
    assert len(outputs["in_process"]) == 40
    # Shards are assigned by sample id, and records within a shard are sorted by it:
    # even the files, not just the set of records, are identical.
    assert outputs["in_process"] == outputs["multi_processing"] == outputs["threads"]
