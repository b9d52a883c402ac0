"""An OGB dataset's splits as one seeds (node tasks) or pairs (link tasks) table each.

Node property prediction: `split/<scheme>/<split>.csv.gz` (per node type in
`split/<scheme>/<type>/` when heterogeneous), one node index a line, or the
`split_dict.pt` that `ogb` reads first when it is there; each split becomes
`seeds-<split>` of the labelled node set (`#id`: the node's number).

Link property prediction: `split/<scheme>/<split>.pt` (or `split_dict.pt`), dicts of
tensors as `ogb`'s LinkPropPredDataset.get_edge_split returns them. Each split becomes
`pairs-<split>` of node set `nodes`: `source`, `target`, `label` (1 for the split's
edges, 0 for its negatives) and `relation` where the pairs have one:

  edge [n, 2], edge_neg [m, 2]                     ogbl-ppa, -collab, -ddi, -vessel
  source_node, target_node [n], target_node_neg [n, k]          ogbl-citation2
  head, relation, tail [n], head_neg / tail_neg [n, k]          ogbl-wikikg2

(a negative of `target_node_neg` pairs the row's source with each of its k targets; of
`head_neg` each of its k heads with the row's tail and relation.) Other per-edge values
(collab's `weight` and `year`) are left out of the pairs: negatives have none; the
graph's own edges keep theirs. Pairs across node types (ogbl-biokg's `head_type`) are
not written: the sampler's link seeds pair two nodes of one node set.

Every index is checked against its node set's size: one line naming the file, the
line (or the array and row) and the value.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from unigraph.columnar.table_source import TableSource
from unigraph.errors import TableError
from unigraph.importers import ogb_files as files
from unigraph.importers.graph import ID, PAIR_SOURCE, PAIR_TARGET, Builder, Split

SPLIT_ORDER = ("train", "valid", "test")
SPLIT_DICT = "split_dict.pt"
LABEL, RELATION = "label", "relation"
NEGATIVE_ROWS = 1 << 16   # positives whose negatives are made into one batch


def _ordered(names) -> list[str]:
    return sorted(names, key=lambda n: (SPLIT_ORDER.index(n) if n in SPLIT_ORDER else 9, n))


def scheme_folder(folder: str, wanted: str | None, builder: Builder) -> str | None:
    """split/<scheme>/ of the dataset: the one asked for, else the only one."""
    split = os.path.join(folder, "split")
    schemes = sorted(d for d in os.listdir(split) if os.path.isdir(os.path.join(split, d))) \
        if os.path.isdir(split) else []
    if wanted is not None:
        if wanted not in schemes:
            raise TableError(f"{split}: no split '{wanted}' (it has "
                             f"{', '.join(schemes) or 'none'})")
        return os.path.join(split, wanted)
    if not schemes:
        builder.note(f"{split}: no splits; the starting spec seeds every labelled node")
        return None
    if len(schemes) > 1:
        raise TableError(f"{split}: several split schemes ({', '.join(schemes)}); choose one "
                         f"with --split")
    return os.path.join(split, schemes[0])


def checked_indices(path: str, values: np.ndarray, count: int, what: str) -> np.ndarray:
    """Node indices (one per line of `path`), each checked to be in [0, count)."""
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise TableError(f"{path}: expected one node index a line, found "
                         f"{values.shape[1] if values.ndim == 2 else values.ndim} values")
    if values.dtype.kind == "f":
        if not files.integral(values):
            row = int(np.argmax(~np.isfinite(values) | (np.mod(values, 1) != 0)))
            raise TableError(f"{path}: line {row + 1}: {values[row]} is not a node index")
        values = values.astype(np.int64)
    bad = (values < 0) | (values >= count)
    if bad.any():
        row = int(np.argmax(bad))
        raise TableError(f"{path}: line {row + 1}: node {int(values[row])} is out of range: "
                         f"{what} has {count:,} nodes")
    return values.astype(np.int64, copy=False)


def _seeds(name: str, ids: np.ndarray) -> Split:
    return Split(name, TableSource.of_table(f"seeds-{name}", pa.table({ID: pa.array(ids)})))


def node_splits(builder: Builder, folder: str, counts: dict[str, int],
                wanted: str | None) -> None:
    """The seeds tables of a node property prediction dataset (module docstring)."""
    schema = builder.graph.schema
    labelled = [n for n in sorted(schema.node_sets) if "labels" in schema.node_sets[n].features]
    scheme = scheme_folder(folder, wanted, builder)
    found: dict[str, dict[str, np.ndarray]] = {}  # node set -> split -> ids
    if scheme is not None:
        homogeneous = len(counts) == 1 and any(n.endswith(".csv.gz") or n == SPLIT_DICT
                                               for n in os.listdir(scheme))
        if homogeneous:
            (node_set, count), = counts.items()
            found[node_set] = _split_files(scheme, count, f"node set '{node_set}'")
        else:
            for node_set, count in sorted(counts.items()):
                where = os.path.join(scheme, node_set)
                if os.path.isdir(where):
                    found[node_set] = _split_files(where, count, f"node set '{node_set}'")
            dict_path = os.path.join(scheme, SPLIT_DICT)
            if not found and os.path.exists(dict_path):
                for split, per_type in files.load_torch(dict_path).items():
                    if not isinstance(per_type, dict):
                        raise TableError(f"{dict_path}: split '{split}' is not a dict of node "
                                         f"types")
                    for node_type, ids in per_type.items():
                        if node_type not in counts:
                            raise TableError(f"{dict_path}: split '{split}' names node type "
                                             f"'{node_type}', which the dataset does not have")
                        found.setdefault(node_type, {})[split] = checked_indices(
                            f"{dict_path} ({split}/{node_type})", np.asarray(ids),
                            counts[node_type], f"node set '{node_type}'")
    candidates = [n for n in labelled if n in found] or labelled or sorted(found)
    if not candidates:
        builder.note("no labels and no splits: no seeds tables and no starting spec")
        return
    seed_set = candidates[0]
    for other in sorted(set(found) - {seed_set}):
        builder.note(f"node set '{other}' has splits too; only '{seed_set}''s are written")
    splits = found.get(seed_set, {})
    builder.seeds(seed_set, "labels" if seed_set in labelled else None,
                  [_seeds(name, splits[name]) for name in _ordered(splits)])


def _split_files(folder: str, count: int, what: str) -> dict[str, np.ndarray]:
    """split -> node indices, from <split>.csv.gz files (else split_dict.pt)."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".csv.gz"))
    if names:
        return {n[:-len(".csv.gz")]: checked_indices(os.path.join(folder, n),
                                                     files.read_values(os.path.join(folder, n)),
                                                     count, what)
                for n in names}
    dict_path = os.path.join(folder, SPLIT_DICT)
    if os.path.exists(dict_path):
        return {str(split): checked_indices(f"{dict_path} ({split})", np.asarray(ids), count, what)
                for split, ids in files.load_torch(dict_path).items()}
    return {}


# ---- link prediction ------------------------------------------------------------------

def link_splits(builder: Builder, folder: str, counts: dict[str, int],
                wanted: str | None) -> None:
    """The pairs tables of a link property prediction dataset (module docstring)."""
    scheme = scheme_folder(folder, wanted, builder)
    if len(counts) != 1:
        builder.note("the pairs of a heterogeneous link dataset join nodes of different node "
                     "sets; the sampler's link seeds pair nodes of one node set: no pairs "
                     "tables written")
        return
    (node_set, count), = counts.items()
    if scheme is None:
        builder.pairs(node_set, [])
        return
    loaded: dict[str, tuple[str, dict]] = {}
    names = [n for n in os.listdir(scheme) if n.endswith(".pt") and n != SPLIT_DICT]
    if names:
        for name in names:
            path = os.path.join(scheme, name)
            loaded[name[:-3]] = (path, files.load_torch(path))
    elif os.path.exists(os.path.join(scheme, SPLIT_DICT)):
        path = os.path.join(scheme, SPLIT_DICT)
        for split, value in files.load_torch(path).items():
            if not isinstance(value, dict):
                raise TableError(f"{path}: split '{split}' is not a dict of arrays")
            loaded[split] = (f"{path} ({split})", value)
    if any("head_type" in value for _, value in loaded.values()):
        builder.note("the pairs join nodes of different node types (head_type, tail_type); "
                     "no pairs tables written")
        return
    relation = all(RELATION in value and not {"edge_neg", "target_node_neg"} & set(value)
                   for _, value in loaded.values()) and bool(loaded)
    splits = []
    for split in _ordered(loaded):
        path, value = loaded[split]
        splits.append(Split(split, _pairs_source(split, path, value, count, node_set,
                                                 relation, builder)))
    builder.pairs(node_set, splits)


def _array(path: str, value: dict, key: str, count: int, what: str, ndim: int) -> np.ndarray:
    array = np.asarray(value[key])
    if array.ndim != ndim or array.dtype.kind not in "iu":
        raise TableError(f"{path}: '{key}' of shape {list(array.shape)} and dtype {array.dtype}, "
                         f"expected {ndim}-dimensional integers")
    bad = (array < 0) | (array >= count)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), array.shape)
        raise TableError(f"{path}: '{key}' row {int(where[0])}: node {int(array[where])} is out "
                         f"of range: {what} has {count:,} nodes")
    return array.astype(np.int64, copy=False)


def _pairs_source(split: str, path: str, value: dict, count: int, node_set: str,
                  relation: bool, builder: Builder) -> TableSource:
    what = f"node set '{node_set}'"

    def get(key, ndim):
        return _array(path, value, key, count, what, ndim) if key in value else None

    if "edge" in value:
        edge = get("edge", 2)
        sources, targets = edge[:, 0], edge[:, 1]
    elif "source_node" in value:
        sources, targets = get("source_node", 1), get("target_node", 1)
    elif "head" in value:
        sources, targets = get("head", 1), get("tail", 1)
    else:
        raise TableError(f"{path}: no pairs ('edge', 'source_node'/'target_node' or "
                         f"'head'/'tail'); it holds {', '.join(sorted(value)) or 'nothing'}")
    if sources is None or targets is None or len(sources) != len(targets):
        raise TableError(f"{path}: the pairs' sources and targets differ in length")
    relations = None
    if relation:
        relations = np.asarray(value[RELATION]).reshape(-1).astype(np.int64)
        if len(relations) != len(sources):
            raise TableError(f"{path}: 'relation' has {len(relations)} rows for "
                             f"{len(sources)} pairs")
    used = {"edge", "edge_neg", "source_node", "target_node", "target_node_neg", "head",
            "tail", "head_neg", "tail_neg", RELATION}
    left = sorted(set(value) - used)
    if left:
        builder.note(f"{path}: {', '.join(left)} left out of the pairs (only the split's edges "
                     f"have them, not its negatives)")
    edge_neg = get("edge_neg", 2)
    target_neg = get("target_node_neg", 2)
    head_neg, tail_neg = get("head_neg", 2), get("tail_neg", 2)
    for key, negatives in (("target_node_neg", target_neg), ("head_neg", head_neg),
                           ("tail_neg", tail_neg)):
        if negatives is not None and len(negatives) != len(sources):
            raise TableError(f"{path}: '{key}' has {len(negatives)} rows for {len(sources)} "
                             f"pairs")
    fields = [(PAIR_SOURCE, pa.int64()), (PAIR_TARGET, pa.int64()), (LABEL, pa.int64())]
    if relation:
        fields.append((RELATION, pa.int64()))
    schema = pa.schema(fields)

    def batch(s, t, label, r):
        columns = [pa.array(s), pa.array(t), pa.array(np.full(len(s), label, np.int64))]
        if relation:
            columns.append(pa.array(r))
        return pa.record_batch(columns, schema=schema)

    def produce():
        yield batch(sources, targets, 1, relations)
        if edge_neg is not None:
            yield batch(edge_neg[:, 0], edge_neg[:, 1], 0, None)
        for start in range(0, len(sources), NEGATIVE_ROWS):
            rows = slice(start, start + NEGATIVE_ROWS)
            if target_neg is not None:
                k = target_neg.shape[1]
                yield batch(np.repeat(sources[rows], k), target_neg[rows].reshape(-1), 0, None)
            for negatives, heads in ((head_neg, True), (tail_neg, False)):
                if negatives is None:
                    continue
                k = negatives.shape[1]
                r = None if relations is None else np.repeat(relations[rows], k)
                if heads:
                    yield batch(negatives[rows].reshape(-1), np.repeat(targets[rows], k), 0, r)
                else:
                    yield batch(np.repeat(sources[rows], k), negatives[rows].reshape(-1), 0, r)

    return TableSource.streamed(f"pairs-{split}", schema, produce)
