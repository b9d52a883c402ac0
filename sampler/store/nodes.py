"""A store's node sets, built in bounded memory: node tables in id order, and names.

    table = write_node_table(out, meta, name, batches, locations, budget, scratch, names)
    names.add(ids)                           # every edge table's ends, batch by batch
    write_names(out, meta, names, budget)    # names, fingerprints, table codes

A node table's rows are sorted by (id, row) with an external sort (sampler.store.
external_sort): every column (features of any kind, timestamps) travels with its row,
so the merged blocks are written as they come: the features and timestamps in id
order, byte for byte what core.node_table.build_node_table and store.layout.feature_arrays
give for the whole table, with its duplicate-id check.

A node set's *names* are the distinct ids of its table and of every edge end that
names it, sorted: `Names` collects them, each batch's distinct ids into sorted runs,
and `write_names` merges them into names.npy, their fingerprints, and, for a set with
a table, the table's rows as codes (the names' positions of the table's ids: the
table's sorted ids are one of the runs, marked, so the merge finds them).
"""
from __future__ import annotations

import os

import numpy as np

from sampler.core import rng
from sampler.core.arrays import unique
from sampler.core.node_table import duplicate_id
from sampler.store.external_sort import Budget, ExternalSort
from sampler.store.layout import feature_arrays
from sampler.store.npy import ConcatFiles, NpyAppender
from sampler.store.spill import block_len

FROM_TABLE, FROM_EDGES = 0, 1  # which run a name came from (a table's ids sort first)


class Names:
    """The ids naming one node set, gathered as sorted runs of distinct ids."""

    def __init__(self, folder: str, budget: Budget):
        self.sorter = ExternalSort(folder, "names", key=("ids", "source"), budget=budget,
                                   unique=1)
        self.width = 1  # the widest id's bytes: numpy's 'S' width of all of them together

    def add(self, ids: np.ndarray) -> None:
        if not len(ids):
            return
        self.width = max(self.width, ids.dtype.itemsize)
        distinct = unique(ids)
        self.sorter.add({"ids": distinct, "source": np.full(len(distinct), FROM_EDGES,
                                                            np.int8)})

    def flush(self) -> None:
        """Spills what is buffered (one edge table's ids at a time are in memory)."""
        self.sorter.spill()

    def table_run(self):
        """A writer for the node table's ids, in order (distinct: the table checks it);
        `end_table_run` adds it."""
        return self.sorter.open_run()

    def end_table_run(self, writer) -> None:
        self.sorter.close_run(writer)

    def close(self) -> None:
        self.sorter.close()


def write_node_table(out, meta: dict, name: str, batches, locations, budget: Budget,
                     scratch: str, names: Names) -> None:
    """Writes a node table's timestamps and features in id order; its ids go to `names`
    as a run. TableError (core.node_table's) on a duplicate id."""
    sorter = ExternalSort(scratch, "node-table", key=("ids", "rows"), budget=budget)
    try:
        features = []
        for batch in batches:
            if not len(batch):
                continue
            features = sorted(batch.features)
            block = {"ids": batch.ids, "rows": batch.rows}
            if batch.timestamps is not None:
                block["times"] = batch.timestamps
            block.update({f"feature:{f}": batch.features[f] for f in features})
            names.width = max(names.width, batch.ids.dtype.itemsize)
            sorter.add(block)
        ids_run = names.table_run()
        times = None
        files = {f: ConcatFiles(out.folder, f"{meta['dir']}/feature{i}.", out.register)
                 for i, f in enumerate(features)}
        before = None  # the last (id, row) written: a duplicate may straddle two blocks
        rows = 0
        try:
            for block in sorter.sorted_blocks():
                ids, row_ids = block["ids"], block["rows"]
                if before is not None and ids[0] == before[0]:
                    raise duplicate_id(name, ids[0], before[1], row_ids[0], locations)
                same = np.flatnonzero(ids[1:] == ids[:-1])
                if len(same):
                    i = same[0]
                    raise duplicate_id(name, ids[i], row_ids[i], row_ids[i + 1], locations)
                before = (ids[-1], row_ids[-1])
                ids_run.write({"ids": ids, "source": np.full(len(ids), FROM_TABLE, np.int8)})
                if "times" in block:
                    if times is None:
                        times = NpyAppender(os.path.join(out.folder,
                                                         f"{meta['dir']}/timestamps.npy"),
                                            block["times"].dtype)
                    times.append(block["times"])
                for i, feature in enumerate(features):
                    description, arrays = feature_arrays(block[f"feature:{feature}"])
                    files[feature].append(arrays)
                    meta["features"][feature] = description | {"prefix": f"feature{i}"}
                rows += block_len(block)
            for f in files.values():
                f.close()
            if times is not None:
                out.register(f"{meta['dir']}/timestamps.npy", times.dtype, times.close())
        except BaseException:
            for f in files.values():
                f.abandon()
            if times is not None:
                times.abandon()
            raise
        finally:
            names.end_table_run(ids_run)
        meta["table_rows"] = rows
    finally:
        sorter.close()


def write_names(out, meta: dict, names: Names) -> None:
    """names.npy (the sorted distinct ids), fingerprints.npy and, with a table,
    table_codes.npy (each table row's name position, in the table's id order)."""
    folder = os.path.join(out.folder, meta["dir"])
    dtype = np.dtype(f"S{names.width}")
    written = {"names.npy": NpyAppender(os.path.join(folder, "names.npy"), dtype),
               "fingerprints.npy": NpyAppender(os.path.join(folder, "fingerprints.npy"),
                                               np.uint64)}
    if meta["table"]:
        written["table_codes.npy"] = NpyAppender(os.path.join(folder, "table_codes.npy"),
                                                 np.int64)
    count = 0
    try:
        for block in names.sorter.sorted_blocks():
            ids = block["ids"].astype(dtype, copy=False)
            written["names.npy"].append(ids)
            written["fingerprints.npy"].append(rng.fingerprint(ids))
            if meta["table"]:
                written["table_codes.npy"].append(
                    count + np.flatnonzero(block["source"] == FROM_TABLE))
            count += len(ids)
        for file_name, appender in written.items():
            out.register(f"{meta['dir']}/{file_name}", appender.dtype, appender.close())
    except BaseException:
        for appender in written.values():
            appender.abandon()
        raise
    finally:
        names.close()
    meta["names"] = count
