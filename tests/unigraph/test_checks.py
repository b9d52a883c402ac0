"""Pure helpers of the cross-file checks."""
import numpy as np

from unigraph import checks
from unigraph.batches import ROW_FILE_SHIFT


def test_buckets_are_stable_and_width_independent():
    narrow = np.array([b"ab", b"c"], dtype="S2")
    wide = np.array([b"ab", b"c"], dtype="S9")
    assert checks.id_buckets(narrow, 97).tolist() == checks.id_buckets(wide, 97).tolist()
    # Fixed values: the same in every process (no salted hash()).
    assert checks.id_buckets(np.array([b"p00", b"p01"]), 256).tolist() == \
        checks.id_buckets(np.array([b"p00", b"p01"]), 256).tolist()
    spread = checks.id_buckets(np.array([f"n{i}".encode() for i in range(10000)]), 16)
    counts = np.bincount(spread, minlength=16)
    assert counts.min() > 400  # 625 expected per bucket


def test_split_by_bucket_keeps_rows_with_ids():
    ids = np.array([b"a", b"b", b"c", b"a"])
    rows = np.arange(4, dtype=np.int64)
    parts = dict(checks.split_by_bucket(ids, rows, 3))
    seen = sorted((i, int(r)) for part_ids, part_rows in parts.values()
                  for i, r in zip(part_ids, part_rows))
    assert seen == [(b"a", 0), (b"a", 3), (b"b", 1), (b"c", 2)]


def test_find_duplicates_and_dangling():
    ids = np.array([b"x", b"y", b"x", b"z", b"x"])
    rows = np.array([4, 1, 0, 2, 9], dtype=np.int64)
    dups = checks.find_duplicates(ids, rows)
    assert [(i, r.tolist()) for i, r in dups] == [(b"x", [0, 4, 9])]
    bad_ids, bad_rows = checks.find_dangling(np.array([b"x", b"q"]), np.array([5, 6]),
                                             np.array([b"x", b"y"]))
    assert bad_ids.tolist() == [b"q"] and bad_rows.tolist() == [6]


def test_messages_name_set_id_and_place(tmp_path):
    csv_path = tmp_path / "n.csv"
    csv_path.write_text('id\na\n"multi\nline"\na\n')
    files = {"n": [str(tmp_path / "other.parquet"), str(csv_path)]}
    problems = checks.duplicate_problems(
        "n", np.array([b"a", b"a"]), np.array([1 << ROW_FILE_SHIFT, (1 << ROW_FILE_SHIFT) + 2]))
    summary = checks.merge_summaries([checks.summarise(problems), ([], 0)])
    error = checks.failure(summary, files)
    assert str(error) == (f"node set 'n': duplicate id 'a' in {csv_path} line 2 and "
                          f"{csv_path} line 5")
    dangling = checks.dangling_problems("e", "target", "n", np.array([b"zz"]),
                                        np.array([3], dtype=np.int64), np.array([b"a"]))
    assert checks.describe_problem(dangling[0], {"e": files["n"]}) == (
        f"edge set 'e': target id 'zz' at {tmp_path / 'other.parquet'} row 3 "
        f"is not in node set 'n'")
    assert checks.failure(([], 0), files) is None
