"""Mutated inputs never crash a command: success, or status 1/2 and one clean line.

Hypothesis draws a base (CSV, Parquet, TFRecord, GZIP TFRecord, a link graph with
pairs, a `sample` output folder, a graph store, an output folder's state files), one
of its files (tables, schema, spec, seeds or pairs; shards, schema and report of the
output; every file of the store; journal, lock, report, staging marker and statistics)
and up to four byte mutations (tests/fuzz/harness.py, tests/fuzz/owned_files.py), and
runs the command that reads it in this process, time-boxed: `sample` (previous output in
place; with or without --seeds; the memory engine, and the Beam engine in a bounded
number of cases), `unigraph-convert` (and its --verify), `sample-check`, `sample-stats`
(with its HTML page), `sample-inspect`, and the batched decoder's readers
(`read-batches`: in order, shuffled, SampleDataset). The property is
harness.violations. 368 examples, the same ones every run (derandomized: the suite
stays reproducible); `make fuzz` draws new cases for 20 minutes and counts.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import harness


class HypothesisDraw:
    def __init__(self, data):
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    built = harness.build_bases(str(root / "bases"))
    return built, harness._digest(built["output"].folder), str(root / "work")


def _check(bases, data, only=None, beam_one_in=0):
    built, previous, work = bases
    if only is not None:
        built = {name: base for name, base in built.items() if name in only}
    case, mutated = harness.draw_case(built, HypothesisDraw(data), beam_one_in)
    outcome, problems = harness.run_case(bases[0], case, mutated, work, previous)
    assert not problems, (f"{case}: {problems}\nstderr: {outcome.stderr}\n"
                          f"{outcome.crash or ''}")


@settings(max_examples=120, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_graphs_never_crash_sample_or_convert(bases, data):
    _check(bases, data, only=("csv", "parquet", "tfrecord", "gzip", "link"))


@settings(max_examples=120, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_outputs_never_crash_the_readers(bases, data):
    _check(bases, data, only=("output",))


@settings(max_examples=60, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_stores_are_refused_or_sample(bases, data):
    """Any file of a graph store (every array and the manifest); with the checksums
    checked, a changed array never samples (tests/fuzz/owned_files.py)."""
    _check(bases, data, only=("store",))


@settings(max_examples=60, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_state_files_never_make_a_run_touch_what_is_not_its_own(bases, data):
    """Journal, lock, report, staging marker, staged files, statistics of an output
    folder: nothing outside it changes, a refused run changes nothing in it."""
    _check(bases, data, only=("state",))


@settings(max_examples=8, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_graphs_never_crash_the_beam_engine(bases, data):
    """A bounded number of cases on the Beam engine (seconds each)."""
    _check(bases, data, only=("csv", "parquet", "tfrecord", "gzip", "link"), beam_one_in=1)


# Cases the fuzzer found, kept as plain examples (each crashed before its fix).
def _write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def test_found_tfrecord_first_record_bad_checksum(bases, tmp_path):
    """An empty first chunk reached `chunk.record(0)`: IndexError traceback."""
    built = bases[0]
    data = bytearray(open(os.path.join(built["tfrecord"].folder, "item.tfrecord"), "rb").read())
    data[20] ^= 0xFF  # inside record 0's data: its data checksum no longer matches
    case = harness.Case("tfrecord", "item.tfrecord", ["flip@20"], "unigraph-convert")
    outcome, problems = harness.run_case(built, case, bytes(data), str(tmp_path / "w"),
                                         bases[1])
    assert not problems and outcome.code == 2
    assert "item.tfrecord: record 0 at byte 0: bad data checksum" in outcome.stderr


def test_found_newline_in_a_csv_header_stays_one_line(bases, tmp_path):
    built = bases[0]
    case = harness.Case("csv", "item.csv", ["token"], "sample")
    data = open(os.path.join(built["csv"].folder, "item.csv"), "rb").read()
    outcome, problems = harness.run_case(built, case, b'"id\n' + data, str(tmp_path / "w"),
                                         bases[1])
    assert not problems and outcome.code == 2
    assert outcome.stderr.count("\n") == 1 and "\\n" in outcome.stderr


def test_found_inspect_names_the_schema_without_the_context_feature(bases, tmp_path):
    """`sample-inspect --seed-id` on an output whose schema lost its context named only
    the flag."""
    built = bases[0]
    case = harness.Case("output", "graph_schema.pbtxt", ["truncate@0"], "sample-inspect",
                        variant=1)
    outcome, problems = harness.run_case(built, case, b"", str(tmp_path / "w"), bases[1])
    assert not problems and outcome.code == 2
    assert "graph_schema.pbtxt has no context feature 'seed_id'" in outcome.stderr


def test_found_an_edge_table_without_rows_samples(bases, tmp_path):
    """A header-only edge table from a node set to itself (link graph): the memory engine
    indexed fingerprints with the empty bucket's non-code ids (IndexError)."""
    built = bases[0]
    case = harness.Case("link", "follows.csv", ["truncate@14"], "sample")
    outcome, problems = harness.run_case(built, case, b"source,target\n", str(tmp_path / "w"),
                                         bases[1])
    assert not problems and outcome.code == 0, outcome


def test_found_a_lock_of_another_host_keeps_the_folder(bases, tmp_path):
    """A state case whose lock names another host: refused, the folder as it was (the
    harness's rule compared the folder without the lock before and with it after)."""
    built = bases[0]
    lock = os.path.join(built["state"].folder, ".sample-lock")
    data = open(lock, "rb").read().replace(b'"host": "', b'"host": "elsewhere-')
    case = harness.Case("state", ".sample-lock", ["host"], "sample")
    outcome, problems = harness.run_case(built, case, data, str(tmp_path / "w"), bases[1])
    assert not problems and outcome.code == 2
    assert "holds .sample-lock; if it is not running any more, delete the lock" in \
        outcome.stderr


@settings(max_examples=150, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)
@given(data=st.data())
def test_mutated_records_decode_in_batches_as_one_by_one(bases, data):
    """Records of the output, some mutated (re-framed: the decoder, not the checksums, is
    reached): the batched decoder gives what parse_example gives record by record, or the
    same error naming the same record."""
    from sampler.graph_tensor import (merge_batch_to_components, parse_example,
                                      parse_examples)
    from sampler.output.folder import iter_records, open_samples
    from unigraph.errors import GraphTensorError

    samples = open_samples(bases[0]["output"].folder)
    originals = [r for path in samples.files for r in iter_records(path)]
    draw = HypothesisDraw(data)
    records = [originals[draw.integer(0, len(originals) - 1)]
               for _ in range(draw.integer(1, 5))]
    for _ in range(draw.integer(1, 2)):
        i = draw.integer(0, len(records) - 1)
        records[i], _ = harness.mutate_bytes(records[i], draw, draw.integer(1, 3))
    try:
        graphs = []
        for i, record in enumerate(records):
            try:
                graphs.append(parse_example(samples.schema, record))
            except GraphTensorError as e:
                raise GraphTensorError(f"record {i}: {e}") from None
        expected = merge_batch_to_components(graphs, validate=False)
    except GraphTensorError as e:
        with pytest.raises(GraphTensorError) as info:
            parse_examples(samples.schema, records)
        if str(e).startswith("record"):
            assert str(info.value) == str(e)
        return
    assert parse_examples(samples.schema, records) == expected
