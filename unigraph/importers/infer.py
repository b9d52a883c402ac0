"""Which plain table is what: a schema guessed from column names and values, to review.

Pure logic over `TableProfile`s (unigraph.importers.tables reads them: each column's
dtype and shape from a sample of its values, the sampled values of the columns that
could be keys, a node table candidate's every id). The guess, in order:

1. **Node tables** have an id column: `#id`, `id`, `<table>_id` (or the singular:
   `users` -> `user_id`), `node_id`, `nid`, `key`, with distinct values in the sample.
2. **References**: another column of a table refers to a node table when its name says
   so (`user_id`, `user`, `users`) and most of its values are that table's ids, or
   (text ids only) when at least 90% of its sampled values are; a number column is never
   taken for a reference by its values alone (`age` is not a user id).
3. **Edge tables** have a pair of end columns: `#source`/`#target`, `source`/`target`,
   `src`/`dst`, `from`/`to`, `head`/`tail`, `u`/`v`, or two references. Each end
   belongs to the node table it refers to, else to a node set without a table, named
   after the column (`user_id` -> `user`), `nodes` for generic names.
4. A node table with one reference (`orders.customer_id`) is a node set and an edge
   set `<table>_<column>` from its rows to the referenced ones.
5. The other columns are features, dtype and shape from the values; a **timestamp**
   column by its type (Parquet timestamps, read as int64 in their unit) or name
   (`timestamp`, `time`, `ts`, `created_at`, `*_time`, `*_at`, ...); the **labels**
   (`label`, `labels`, `y`, `class`) make their table the seed set; a **split** column
   (`split`: train / valid / test values) or boolean `*_mask` columns of the seed set
   give the seeds tables.

Every guess carries its reason; `Hints` (the command's flags) override any of them.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from unigraph.errors import SchemaError
from unigraph.importers.graph import set_name
from unigraph.protos import graph_schema_pb2 as gs

ID_NAMES = ("#id", "id", "node_id", "nid", "key")
END_PAIRS = (("#source", "#target"), ("source", "target"), ("src", "dst"),
             ("src_id", "dst_id"), ("source_id", "target_id"), ("from", "to"),
             ("head", "tail"), ("u", "v"), ("sender", "receiver"))
LABEL_NAMES = ("label", "labels", "y", "class")
SPLIT_NAMES = ("split", "fold", "subset")
SPLIT_VALUES = {"train", "valid", "val", "validation", "test", "dev"}
TIME_NAMES = ("#timestamp", "timestamp", "time", "ts", "datetime", "date", "created_at",
              "event_time")
MASK_SUFFIX = "_mask"
VALUE_MATCH = 0.9        # share of sampled values that must be ids of the referenced table
NAME_MATCH = 0.5         # with a name that says so, this share is enough
GENERIC_NODE_SET = "nodes"


@dataclasses.dataclass
class ColumnProfile:
    name: str
    dtype: int                          # gs.DT_*
    shape: tuple[int, ...]              # () scalar, (d,) vector, (-1,) ragged
    unique: bool = False                # sampled values all distinct (scalars)
    sample: np.ndarray | None = None    # 'S' sampled values of scalar text/integer columns
    is_time: bool = False               # an Arrow timestamp or date
    note: str = ""                      # how the type was read, for the review
    values: set | None = None           # distinct text values of a low-cardinality column

    @property
    def keyable(self) -> bool:
        """Scalar text or integers: can hold ids."""
        return not self.shape and self.dtype in (gs.DT_STRING, gs.DT_INT64) and not self.is_time


@dataclasses.dataclass
class TableProfile:
    stem: str                            # the table's name: its file's, shards joined
    files: list[str]
    fmt: str                             # csv, parquet, tfrecord
    rows: int                            # rows sampled
    columns: dict[str, ColumnProfile]    # in table order
    ids: np.ndarray | None = None        # every value of the id column ('S'), if a node table


@dataclasses.dataclass
class Hints:
    """Corrections of the guess (the command's flags)."""

    nodes: dict[str, str] = dataclasses.field(default_factory=dict)       # table -> id column
    edges: dict[str, tuple[tuple[str, str | None], tuple[str, str | None]]] = \
        dataclasses.field(default_factory=dict)   # table -> ((column, set), (column, set))
    names: dict[str, str] = dataclasses.field(default_factory=dict)       # table -> set name
    skip: set[str] = dataclasses.field(default_factory=set)               # table, table.column
    dtypes: dict[str, int] = dataclasses.field(default_factory=dict)      # table.column -> DT_*
    timestamps: dict[str, str] = dataclasses.field(default_factory=dict)  # table -> column, "" none
    label: str | None = None          # table.column
    split: str | None = None          # table.column
    seed_set: str | None = None


@dataclasses.dataclass
class NodeGuess:
    table: str
    set_name: str
    id_column: str
    reason: str


@dataclasses.dataclass
class End:
    column: str
    node_set: str
    reason: str


@dataclasses.dataclass
class EdgeGuess:
    table: str
    set_name: str
    source: End
    target: End
    from_node_table: bool = False   # a node table's reference column (orders.customer_id)


@dataclasses.dataclass
class Guess:
    profiles: dict[str, TableProfile]
    nodes: dict[str, NodeGuess]                 # by table
    edges: list[EdgeGuess]
    tableless: dict[str, str]                   # node sets without a table -> why
    features: dict[str, dict[str, ColumnProfile]]   # table -> column -> its profile
    timestamps: dict[str, str]                  # table -> its timestamp column
    left_out: dict[str, list[str]]              # table -> columns left out, with why
    seed_set: str | None = None
    label: tuple[str, str] | None = None        # (table, column)
    split: tuple[str, str] | None = None        # (table, column): text values or a mask prefix
    masks: dict[str, str] = dataclasses.field(default_factory=dict)  # split -> mask column


_IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman",
              "data": "datum", "indices": "index", "vertices": "vertex"}


def singular(name: str) -> str:
    if name in _IRREGULAR:
        return _IRREGULAR[name]
    if name.endswith("ies") and len(name) > 4:
        return name[:-3] + "y"
    if name.endswith("ses") or name.endswith("xes"):
        return name[:-2]
    if name.endswith("s") and not name.endswith("ss") and len(name) > 2:
        return name[:-1]
    return name


def _base(column: str) -> str:
    """`user_id` -> `user`; `userId` -> `user`; `#source` -> `source`."""
    column = column.lstrip("#")
    for suffix in ("_id", "_key", "Id", "ID", "id"):
        if column.endswith(suffix) and len(column) > len(suffix):
            return column[:-len(suffix)].rstrip("_")
    return column


def _names_table(column: str, table: str) -> bool:
    """Whether a column's name refers to a table: `user_id`, `user`, `users`, and with a
    qualifier, `buyer_user_id`."""
    base = _base(column).lower()
    names = {table.lower(), singular(table.lower())}
    return base in names or singular(base) in names or \
        any(base.endswith("_" + name) for name in names)


def _share(sample: np.ndarray | None, ids: np.ndarray | None) -> float:
    if sample is None or ids is None or not len(sample):
        return 0.0
    return float(np.isin(sample, ids).mean())


def _id_column(profile: TableProfile, hints: Hints) -> tuple[str | None, str]:
    if profile.stem in hints.nodes:
        column = hints.nodes[profile.stem]
        if column not in profile.columns:
            raise SchemaError(f"--nodes {profile.stem}={column}: table '{profile.stem}' has no "
                              f"column '{column}' (it has {', '.join(profile.columns)})")
        return column, "given"
    names = list(ID_NAMES[:2]) + [f"{profile.stem}_id", f"{singular(profile.stem)}_id",
                                  f"{singular(profile.stem)}Id"] + list(ID_NAMES[2:])
    for name in names:
        column = profile.columns.get(name)
        if column is not None and column.keyable and column.unique:
            return name, f"by name, {'distinct' if profile.rows else 'no'} values"
    return None, ""


def _explicit_ends(profile: TableProfile) -> tuple[str, str] | None:
    for source, target in END_PAIRS:
        if source in profile.columns and target in profile.columns:
            return source, target
    return None


def infer(profiles: dict[str, TableProfile], hints: Hints | None = None) -> Guess:
    """The guess for these tables (module docstring)."""
    hints = hints or Hints()
    for table in list(hints.nodes) + list(hints.edges) + list(hints.names):
        if table not in profiles:
            raise SchemaError(f"no table '{table}' (tables: {', '.join(profiles) or 'none'})")
    tables = {stem: p for stem, p in profiles.items() if stem not in hints.skip}
    nodes: dict[str, NodeGuess] = {}
    for stem, profile in tables.items():
        if stem in hints.edges:
            continue
        explicit = _explicit_ends(profile)
        column, reason = _id_column(profile, hints)
        if column is not None and (explicit is None or stem in hints.nodes):
            nodes[stem] = NodeGuess(stem, set_name(hints.names.get(stem, stem)), column, reason)
    node_sets = {g.set_name: stem for stem, g in nodes.items()}
    if len(node_sets) != len(nodes):
        raise SchemaError("two node tables would make one node set; name them with --name")

    def reference(profile: TableProfile, column: str) -> End | None:
        """The node table a column refers to, by name and values, or by text values."""
        col = profile.columns[column]
        if not col.keyable:
            return None
        best = None
        for stem, guess in nodes.items():
            if stem == profile.stem and column == guess.id_column:
                continue
            share = _share(col.sample, profiles[stem].ids)
            by_name = _names_table(column, stem) or _names_table(column, guess.set_name)
            if by_name and (share >= NAME_MATCH or profiles[stem].ids is None):
                reason = f"by name ({share:.0%} of sampled values are its ids)"
                candidate = (2, share, End(column, guess.set_name, reason))
            elif share >= VALUE_MATCH and col.dtype == gs.DT_STRING:
                candidate = (1, share, End(column, guess.set_name,
                                           f"by values ({share:.0%} are its ids)"))
            else:
                continue
            if best is None or candidate[:2] > best[:2]:
                best = candidate
        return best[2] if best else None

    edges: list[EdgeGuess] = []
    tableless: dict[str, str] = {}
    for stem, profile in tables.items():
        if stem in nodes:
            continue
        given = hints.edges.get(stem)
        if given is not None:
            ends = []
            for column, node_set in given:
                if column not in profile.columns:
                    raise SchemaError(f"--edges {stem}: table '{stem}' has no column '{column}' "
                                      f"(it has {', '.join(profile.columns)})")
                found = reference(profile, column)
                chosen = node_set or (found.node_set if found else set_name(_base(column)))
                ends.append(End(column, chosen, "given"))
            edges.append(EdgeGuess(stem, set_name(hints.names.get(stem, stem)), *ends))
            continue
        explicit = _explicit_ends(profile)
        candidates = list(explicit) if explicit else [
            c for c in profile.columns if reference(profile, c) is not None][:2]
        if len(candidates) < 2:
            continue
        ends = []
        for column in candidates:
            found = reference(profile, column)
            if found is None:
                generic = explicit is not None and column in explicit
                name = GENERIC_NODE_SET if generic else set_name(_base(column))
                found = End(column, name, "no node table holds its values: a node set "
                                          "without a table")
                tableless.setdefault(name, f"ids named by '{stem}.{column}'")
            ends.append(found)
        edges.append(EdgeGuess(stem, set_name(hints.names.get(stem, stem)), *ends))
    for stem, guess in nodes.items():
        for column in tables[stem].columns:
            if column == guess.id_column or f"{stem}.{column}" in hints.skip:
                continue
            found = reference(tables[stem], column)
            if found is not None and _names_table(column, found.node_set):
                edges.append(EdgeGuess(stem, set_name(f"{guess.set_name}_{_base(column)}"),
                                       End(guess.id_column, guess.set_name, "its id column"),
                                       found, from_node_table=True))
    for node_set in list(tableless):
        if node_set in node_sets:
            del tableless[node_set]
    return _features(profiles, tables, nodes, edges, tableless, hints)


def _features(profiles, tables, nodes, edges, tableless, hints: Hints) -> Guess:
    guess = Guess(profiles, nodes, edges, tableless, {}, {}, {})
    keys: dict[str, set[str]] = {stem: set() for stem in tables}
    for stem, node in nodes.items():
        keys[stem].add(node.id_column)
    for edge in edges:
        keys[edge.table].update({edge.source.column, edge.target.column})
    label = _pick_label(tables, nodes, hints)
    guess.label = label
    seed_table = label[0] if label else None
    if hints.seed_set is not None:
        match = [stem for stem, n in nodes.items() if n.set_name == hints.seed_set]
        if not match:
            raise SchemaError(f"--seed-set {hints.seed_set}: not a node set with a table "
                              f"(node tables: {', '.join(n.set_name for n in nodes.values())})")
        seed_table = match[0]
    if seed_table is None and nodes:
        seed_table = next(iter(nodes))
    guess.seed_set = nodes[seed_table].set_name if seed_table else None
    if seed_table is not None:
        guess.split, guess.masks = _pick_split(tables[seed_table], hints)
    for stem, profile in tables.items():
        if stem not in nodes and not any(e.table == stem for e in edges):
            guess.left_out[stem] = ["the whole table: neither an id column nor two end "
                                    "columns (--nodes or --edges says what it is)"]
            continue
        time = _pick_time(profile, hints)
        if time:
            guess.timestamps[stem] = time
        features, left = {}, []
        for column, col in profile.columns.items():
            qualified = f"{stem}.{column}"
            if column in keys[stem]:
                continue
            if qualified in hints.skip:
                left.append(f"{column} (--skip)")
                continue
            if stem == seed_table and (guess.split == (stem, column)
                                       or column in guess.masks.values()):
                left.append(f"{column} (the split)")
                continue
            if stem in nodes and any(e.table == stem and e.from_node_table
                                     and e.target.column == column for e in edges):
                continue
            if col.dtype == gs.DT_INVALID:
                left.append(f"{column} ({col.note})")
                continue
            if qualified in hints.dtypes:
                col = dataclasses.replace(col, dtype=hints.dtypes[qualified],
                                          note=f"--dtype {gs.DataType.Name(hints.dtypes[qualified])}")
            features[column] = col
        guess.features[stem] = features
        if left:
            guess.left_out[stem] = left
    return guess


def _pick_label(tables, nodes, hints: Hints) -> tuple[str, str] | None:
    if hints.label is not None:
        table, _, column = hints.label.partition(".")
        if table not in nodes or column not in tables[table].columns:
            raise SchemaError(f"--label {hints.label}: give TABLE.COLUMN of a node table")
        return table, column
    for stem in nodes:
        for name in LABEL_NAMES:
            column = tables[stem].columns.get(name)
            if column is not None and not column.shape:
                return stem, name
    return None


def _pick_split(profile: TableProfile, hints: Hints) -> tuple[tuple[str, str] | None, dict]:
    if hints.split is not None:
        table, _, column = hints.split.partition(".")
        if table != profile.stem or column not in profile.columns:
            raise SchemaError(f"--split-column {hints.split}: give TABLE.COLUMN of the seed "
                              f"set's table '{profile.stem}'")
        return (table, column), {}
    for name in SPLIT_NAMES:
        column = profile.columns.get(name)
        if column is not None and column.values and set(column.values) & SPLIT_VALUES:
            return (profile.stem, name), {}
    masks = {c[:-len(MASK_SUFFIX)]: c for c, col in profile.columns.items()
             if c.endswith(MASK_SUFFIX) and col.dtype == gs.DT_BOOL and not col.shape}
    return None, masks


def _pick_time(profile: TableProfile, hints: Hints) -> str | None:
    if profile.stem in hints.timestamps:
        column = hints.timestamps[profile.stem]
        if column and column not in profile.columns:
            raise SchemaError(f"--timestamp {profile.stem}={column}: no such column")
        return column or None
    numeric = (gs.DT_INT64, gs.DT_INT32, gs.DT_FLOAT, gs.DT_DOUBLE)
    for column, col in profile.columns.items():
        if col.is_time and not col.shape:
            return column
    for column, col in profile.columns.items():
        named = column.lower() in TIME_NAMES or re.search(r"(_time|_at|_ts)$", column.lower())
        if named and not col.shape and col.dtype in numeric:
            return column
    return None
