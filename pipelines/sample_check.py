"""`sample-check`: decode and validate every record of a `sample` output folder.

    sample-check out/

Records are decoded many at a time (the batched decoder, sampler.graph_tensor) against
the folder's graph_schema.pbtxt and checked over whole columns; a chunk with a record
that breaks a rule is checked again record by record with the numpy GraphTensor core,
which names what is wrong. The rules: the core's rules (sizes, index ranges, edges
inside their component, the readout structure) and the output encoding's
(docs/architecture.md, "The output contract"): one subgraph per record, `#id` on
every node set, ids unique and in canonical order (the seed first, the rest by
id), one `_readout` node reached from node 0 of the seed node set by
`_readout/seed`, and context `seed_id` equal to the seed's `#id`. Prints counts
and the first bad record with its file and index; exits 1 if any record is bad
(or the counts disagree with sample_report.json), 2 if the folder cannot be
read at all.
No TensorFlow: this runs wherever the sampler runs.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Optional

import numpy as np

from sampler.graph_tensor import READOUT_NODE_SET, GraphTensor, parse_example
from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.graph_tensor.example_batch import ExampleBatch, Strings
from sampler.output.batches import file_chunks
from sampler.output.files import REPORT_FILE
from sampler.output.folder import SamplesError, open_samples
from sampler.output.names import (ID_FEATURE, LINK_READOUT_EDGE_SETS, READOUT_EDGE_SET,
                                  SEED_ID_FEATURE, SOURCE_ID_FEATURE, TARGET_ID_FEATURE)
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.storage import paths
from unigraph.errors import SamplerError, message_line, one_line, printable
from unigraph.interrupts import interruptible


class BadRecord(SamplerError):
    """A record breaks a rule of the output encoding."""


@dataclasses.dataclass
class BadRecordAt:
    file: str
    index: int       # record index within its file, from 0
    message: str


@dataclasses.dataclass
class CheckReport:
    files: int = 0
    records: int = 0
    bad_records: int = 0
    first_bad: Optional[BadRecordAt] = None
    nodes: dict = dataclasses.field(default_factory=dict)   # node set -> total over records
    edges: dict = dataclasses.field(default_factory=dict)
    report_mismatches: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.bad_records and not self.report_mismatches


def is_link_output(schema: gs.GraphSchema) -> bool:
    """Link samples (pairs) rather than node samples."""
    return LINK_READOUT_EDGE_SETS[0] in schema.edge_sets


def check_schema(schema: gs.GraphSchema, where: str = "graph schema") -> None:
    """The folder's schema must describe the output encoding; SamplesError (starting with
    `where`, the schema's path) if not."""
    link = is_link_output(schema)
    readout_sets = LINK_READOUT_EDGE_SETS if link else (READOUT_EDGE_SET,)
    context = (SOURCE_ID_FEATURE, TARGET_ID_FEATURE) if link else (SEED_ID_FEATURE,)
    for name in readout_sets:
        if name not in schema.edge_sets or READOUT_NODE_SET not in schema.node_sets:
            raise SamplesError(f"{where}: no '{name}' edge set or "
                               f"'{READOUT_NODE_SET}' node set")
        if schema.edge_sets[name].source not in schema.node_sets:
            raise SamplesError(f"{where}: '{name}' starts at unknown node set "
                               f"'{schema.edge_sets[name].source}'")
    for name, node_set in sorted(schema.node_sets.items()):
        if name != READOUT_NODE_SET and ID_FEATURE not in node_set.features:
            raise SamplesError(f"{where}: node set '{name}' has no '{ID_FEATURE}' feature")
    for name in context:
        if name not in schema.context.features:
            raise SamplesError(f"{where}: no context feature '{name}'")


def check_sampled_graph(graph: GraphTensor, seed_set: str, link: bool = False) -> None:
    """The output encoding's rules for one decoded (and core-validated) record; `link`:
    a pair's record (source node 0, target node 1 or, when it is the source, 0)."""
    seeds = 1
    if link:
        source_id = graph.context.features[SOURCE_ID_FEATURE][0]
        target_id = graph.context.features[TARGET_ID_FEATURE][0]
        seeds = 1 + int(source_id != target_id)
    if graph.num_components != 1:
        raise BadRecord(f"{graph.num_components} graph components, expected 1 subgraph")
    for name, node_set in sorted(graph.node_sets.items()):
        if name == READOUT_NODE_SET:
            continue
        ids = node_set.features.get(ID_FEATURE)
        if ids is None:
            raise BadRecord(f"node set '{name}' has no '{ID_FEATURE}'")
        rest = ids[seeds:] if name == seed_set else ids
        if len(rest) > 1:
            steps = rest[1:] > rest[:-1]
            if not steps.all():
                i = int(np.flatnonzero(~steps)[0]) + 1 + seeds * (name == seed_set)
                raise BadRecord(f"node set '{name}': node {i} has {ID_FEATURE} {ids[i]!r} "
                                f"after {ids[i - 1]!r}; ids must be unique and sorted "
                                f"(after the seed)")
    if graph.node_sets[READOUT_NODE_SET].total_size != 1:
        raise BadRecord(f"node set '{READOUT_NODE_SET}' has "
                        f"{graph.node_sets[READOUT_NODE_SET].total_size} nodes, expected 1")
    seed_ids = graph.node_sets[seed_set].features[ID_FEATURE]
    expected = ([(LINK_READOUT_EDGE_SETS[0], SOURCE_ID_FEATURE, 0),
                 (LINK_READOUT_EDGE_SETS[1], TARGET_ID_FEATURE, seeds - 1)] if link
                else [(READOUT_EDGE_SET, SEED_ID_FEATURE, 0)])
    for edge_set, context, node in expected:
        adjacency = graph.edge_sets[edge_set].adjacency
        if adjacency.source.tolist() != [node]:
            raise BadRecord(f"edge set '{edge_set}' has sources {adjacency.source.tolist()}, "
                            f"expected [{node}]: node {node} of '{seed_set}' is read out")
        seed_id = graph.context.features[context][0]
        if len(seed_ids) <= node:
            raise BadRecord(f"context {context} {seed_id!r} is not node {node} of "
                            f"'{seed_set}' (it has {len(seed_ids)} nodes)")
        if seed_ids[node] != seed_id:
            raise BadRecord(f"context {context} {seed_id!r} is not node {node} of "
                            f"'{seed_set}' ({ID_FEATURE} {seed_ids[node]!r})")


def batch_passes(batch: ExampleBatch, seed_set: str, link: bool = False) -> bool:
    """Whether every record of a decoded batch keeps the rules check_sampled_graph checks,
    found over whole columns. It may say False for a batch whose records are all good
    (strings that end in NUL bytes, say); the records are then checked one by one, and
    that check names what is wrong."""
    if not (batch.components == 1).all():
        return False
    if not (batch.node_sets[READOUT_NODE_SET].sizes == 1).all():
        return False
    context = batch.context.features
    names = (SOURCE_ID_FEATURE, TARGET_ID_FEATURE) if link else (SEED_ID_FEATURE,)
    if not all(_plain_strings(context.get(name)) for name in names):
        return False
    seeds = np.ones(batch.records, dtype=np.int64)
    if link:
        seeds += context[SOURCE_ID_FEATURE].fixed != context[TARGET_ID_FEATURE].fixed
    for name, piece in batch.node_sets.items():
        if name == READOUT_NODE_SET:
            continue
        ids = piece.features.get(ID_FEATURE)
        if not _plain_strings(ids):
            return False
        skip = seeds if name == seed_set else np.zeros(batch.records, dtype=np.int64)
        if not _ascending_after(ids.fixed, piece.sizes, skip):
            return False
    seed_ids = batch.node_sets[seed_set].features[ID_FEATURE].fixed
    seed_sizes = batch.node_sets[seed_set].sizes
    first = np.cumsum(seed_sizes) - seed_sizes
    expected = ([(LINK_READOUT_EDGE_SETS[0], SOURCE_ID_FEATURE, np.zeros_like(seeds)),
                 (LINK_READOUT_EDGE_SETS[1], TARGET_ID_FEATURE, seeds - 1)] if link
                else [(READOUT_EDGE_SET, SEED_ID_FEATURE, np.zeros_like(seeds))])
    for edge_set, context_name, node in expected:
        edges = batch.edge_sets[edge_set]
        if not (edges.sizes == 1).all() or not (edges.source == first + node).all():
            return False
        if not (seed_sizes > node).all():
            return False
        if not (seed_ids[first + node] == context[context_name].fixed).all():
            return False
    return True


def _plain_strings(values) -> bool:
    """A vector of strings none of which ends in a NUL byte (so that their fixed-width
    form orders and compares as the bytes do)."""
    return (isinstance(values, Strings) and not values.as_objects and values.fixed.ndim == 1
            and not values.exact)


def _ascending_after(ids: np.ndarray, sizes: np.ndarray, skip: np.ndarray) -> bool:
    """Within each record (sizes: its ids), the ids after its first `skip` strictly
    ascend."""
    if len(ids) < 2:
        return True
    # Neighbours (p, p + 1) that must ascend: from the record's start + skip on, up to
    # its last id: +1 where such a run starts, -1 where it stops, summed along.
    starts = np.cumsum(sizes) - sizes
    begin, end = starts + np.minimum(skip, sizes), starts + sizes - 1
    runs = begin < end
    marks = np.zeros(len(ids) + 1, dtype=np.int64)
    np.add.at(marks, begin[runs], 1)
    np.add.at(marks, end[runs], -1)
    required = np.cumsum(marks[:-1])[:-1] > 0
    return bool((ids[1:] > ids[:-1])[required].all())


def check_folder(folder: str) -> CheckReport:
    samples = open_samples(folder)
    check_schema(samples.schema, samples.schema_path)
    link = is_link_output(samples.schema)
    seed_set = samples.schema.edge_sets[
        LINK_READOUT_EDGE_SETS[0] if link else READOUT_EDGE_SET].source
    report = CheckReport(files=len(samples.files),
                         nodes={n: 0 for n in sorted(samples.schema.node_sets)},
                         edges={n: 0 for n in sorted(samples.schema.edge_sets)})
    decoder = BatchDecoder(samples.schema)

    def bad(path: str, index: int, message: str) -> None:
        report.bad_records += 1
        if report.first_bad is None:
            report.first_bad = BadRecordAt(path, index, one_line(message))

    def count(pieces, totals) -> None:
        for name, piece in pieces.items():
            totals[name] += int(piece.sizes.sum())

    for path in samples.files:
        index = 0  # the next record's index in the file
        try:
            for chunk in file_chunks(path):
                index = chunk.first_index + len(chunk)
                report.records += len(chunk)
                try:  # the usual case: a chunk of good records, checked as columns
                    batch = decoder.decode(chunk.buffer, chunk.starts, chunk.lengths)
                    passes = batch_passes(batch, seed_set, link)
                except SamplerError:
                    passes = False
                if passes:
                    count(batch.node_sets, report.nodes)
                    count(batch.edge_sets, report.edges)
                    continue
                for i in range(len(chunk)):  # else one by one, to say what is wrong
                    try:
                        graph = parse_example(samples.schema, chunk.record(i))
                        check_sampled_graph(graph, seed_set, link)
                    except SamplerError as e:
                        bad(path, chunk.first_index + i, str(e))
                        continue
                    for name, piece in graph.node_sets.items():
                        report.nodes[name] += piece.total_size
                    for name, piece in graph.edge_sets.items():
                        report.edges[name] += piece.total_size
        except SamplerError as e:  # damaged framing: the rest of the file is unreadable
            bad(path, index, str(e))
    report.report_mismatches = _compare_with_run_report(samples.folder, report)
    return report


def _compare_with_run_report(folder: str, report: CheckReport) -> list[str]:
    """Counts in sample_report.json that the records do not match (none if it is absent)."""
    path = paths.join(folder, REPORT_FILE)
    if not paths.exists(path):
        return []
    with paths.open_binary(path) as f:
        written = json.loads(f.read().decode("utf-8"))
    mismatches = []
    if "subgraphs_written" in written and written["subgraphs_written"] != report.records:
        mismatches.append(f"{REPORT_FILE} says {written['subgraphs_written']} subgraphs "
                          f"written, the files hold {report.records} records")
    if report.bad_records:
        return mismatches  # totals of a partly bad folder mean little
    for kind, key, counted in (("node set", "nodes_per_subgraph", report.nodes),
                               ("edge set", "edges_per_subgraph", report.edges)):
        for name, stats in sorted(written.get(key, {}).items()):
            if name in counted and stats.get("total") != counted[name]:
                mismatches.append(f"{REPORT_FILE}: {kind} '{name}' total {stats.get('total')}, "
                                  f"the records hold {counted[name]}")
    return mismatches


def format_report(folder: str, report: CheckReport) -> str:
    per = max(report.records - report.bad_records, 1)
    lines = [f"{folder}: {report.records:,} records in {report.files} files, "
             f"{report.bad_records:,} bad"]
    for kind, totals in (("nodes", report.nodes), ("edges", report.edges)):
        lines.append(f"{kind}: " + ", ".join(f"{name} {total:,} ({total / per:.2f}/record)"
                                             for name, total in totals.items()))
    if report.first_bad:
        b = report.first_bad
        lines.append(f"first bad record: {b.file} record {b.index}: {b.message}")
    lines += [f"mismatch: {m}" for m in report.report_mismatches]
    lines.append("OK" if report.ok else "FAILED")
    return "\n".join(lines)


@interruptible("sample-check", "interrupted")
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sample-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", metavar="OUT", help="a `sample` output folder")
    args = parser.parse_args(argv)
    try:
        report = check_folder(args.output)
    except SamplerError as e:
        print(f"sample-check: error: {message_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. a shard that cannot be read
        print(f"sample-check: error: {one_line(e)}", file=sys.stderr)
        return 2
    print(printable(format_report(args.output, report), keep="\n"))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
