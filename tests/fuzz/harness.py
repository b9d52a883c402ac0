"""Fuzzing the five commands (and the batched decoder's readers, `read-batches`): base
inputs, byte mutations, in-process runs, the property.

Shared by the bounded suite (tests/fuzz/test_fuzz_inputs.py, hypothesis) and the long
session (`make fuzz`: tests/fuzz/long_run.py, a plain random loop that keeps going
after a crash and writes the counts).

Bases (`build_bases`): small graphs in every table format (CSV, Parquet, plain TFRecord,
GZIP TFRecord), a link graph with a pairs table, each with its schema, spec and seeds
table, a `sample` output folder for the commands that read one, and what a run finds
rather than reads (tests/fuzz/owned_files.py): a graph store and an output folder's
state files. A *case* picks one file of one base and a list of mutations; for TFRecord
files a mutation may act on one record's payload with the framing and CRCs made valid
again (so the Example parsers are reached, not only the CRC check), for GZIP on the
inflated stream (recompressed), for a store's arrays on their data in place. `sample`
runs with or without --seeds, on the memory engine or (a bounded share of cases) the
Beam engine; `sample-stats` with or without its HTML page.

The property (`violations`): the command succeeds, or exits with status 1 or 2 and at
most three lines on stderr (status 2: naming the mutated file); never a traceback (an
exception escaping `main`), never a hang (each run is time-boxed by SIGALRM), and never a
partial output (a failed `sample` leaves the previous output byte for byte, a failed
`unigraph-convert` leaves no output folder behind); sample-stats' page holds no tag
from the data; and the store's and state files' own rules (owned_files.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import html.parser
import io
import os
import shutil
import signal
import struct
import traceback
from typing import Callable, Protocol

from tests.fuzz import owned_files
from tests.unigraph import graphs
from unigraph.encoding import tfrecord

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK_TINY = os.path.join(REPO, "examples", "link_tiny")
SPEC = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "links" input_op_names: "seed" edge_set_name: "link"
               sample_size: 2 strategy: RANDOM_WEIGHTED }
sampling_ops { op_name: "back" input_op_names: ["seed", "links"] edge_set_name: "linked_by"
               sample_size: 1 strategy: TOP_K }
sampling_ops { op_name: "tags" input_op_names: ["seed"] edge_set_name: "tagged"
               sample_size: 1 strategy: RANDOM_UNIFORM }
"""
SEEDS = [("i1", 5), ("i3", 7), ("i2", 1)]
TIMEOUT_S = 30.0   # one command run; the tiny inputs take well under a second


# ---- bases -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Base:
    name: str
    folder: str
    schema: str           # file name in folder
    spec: str
    seeds: str
    files: tuple[str, ...]  # the files a case may mutate


def _write_seeds(folder: str, fmt: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt == "csv":
        name = "seeds.csv"
        with open(os.path.join(folder, name), "w") as f:
            f.write("id,timestamp\n" + "".join(f"{i},{t}\n" for i, t in SEEDS))
    elif fmt == "parquet":
        name = "seeds.parquet"
        pq.write_table(pa.table({"id": [i for i, _ in SEEDS],
                                 "timestamp": pa.array([t for _, t in SEEDS], pa.int64())}),
                       os.path.join(folder, name))
    elif fmt == "txt":
        name = "seeds.txt"
        with open(os.path.join(folder, name), "w") as f:
            f.write("".join(f"{i}\n" for i, _ in SEEDS))
    else:
        name = "seeds.tfrecord"
        graphs.write_records(os.path.join(folder, name),
                             [graphs.example(**{"id": [i], "timestamp": [t]}) for i, t in SEEDS])
    return name


def _gzip_tfrecords(folder: str) -> None:
    """TFRecord files compressed in place (the readers tell by the bytes)."""
    for name in os.listdir(folder):
        if name.endswith(".tfrecord"):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(gzip.compress(data, mtime=0))


def _link_base(folder: str) -> None:
    """examples/link_tiny cut to its first rows (small inputs keep a run fast)."""
    for name in os.listdir(LINK_TINY):
        if name.endswith(".md"):
            continue
        with open(os.path.join(LINK_TINY, name)) as f:
            lines = f.readlines()
        if name.endswith(".csv"):
            lines = lines[:25]
        with open(os.path.join(folder, name), "w") as f:
            f.writelines(lines)


def build_bases(root: str) -> dict[str, Base]:
    """Every base under `root` (a fresh folder), plus root/previous: a `sample` output."""
    bases = {}
    writers = {"csv": graphs.write_csv_graph, "parquet": graphs.write_parquet_graph,
               "tfrecord": graphs.write_tfrecord_graph, "gzip": graphs.write_tfrecord_graph}
    seed_formats = {"csv": "csv", "parquet": "parquet", "tfrecord": "tfrecord", "gzip": "txt"}
    for name, write in writers.items():
        folder = os.path.join(root, name)
        os.makedirs(folder)
        write(folder)
        seeds = _write_seeds(folder, seed_formats[name])
        if name == "gzip":
            _gzip_tfrecords(folder)
        with open(os.path.join(folder, "spec.pbtxt"), "w") as f:
            f.write(SPEC)
        bases[name] = Base(name, folder, "graph_schema.pbtxt", "spec.pbtxt", seeds,
                           tuple(sorted(os.listdir(folder))))
    folder = os.path.join(root, "link")
    os.makedirs(folder)
    _link_base(folder)
    bases["link"] = Base("link", folder, "graph_schema.pbtxt", "sampling_spec.pbtxt",
                         "pairs.csv", tuple(sorted(os.listdir(folder))))
    # The output the read commands are fuzzed on, and the previous output every fuzzed
    # `sample` run must leave intact when it fails.
    previous = os.path.join(root, "previous")
    base = bases["csv"]
    outcome = run_command("sample", ["--graph", os.path.join(base.folder, base.schema),
                                     "--spec", os.path.join(base.folder, base.spec),
                                     "--seeds", os.path.join(base.folder, base.seeds),
                                     "--output", previous + "/", "--workers", "1",
                                     "--quiet", "--negatives", "0"])
    assert outcome.code == 0, outcome
    bases["output"] = Base("output", previous, "graph_schema.pbtxt", "", "",
                           tuple(sorted(n for n in os.listdir(previous)
                                        if not n.startswith(".")
                                        and os.path.isfile(os.path.join(previous, n)))))
    # What a run finds rather than reads (tests/fuzz/owned_files.py): a graph store, and
    # an output folder's state files.
    store = owned_files.build_store_base(root, bases["csv"])
    bases["store"] = Base("store", store, "", "", "", owned_files.relative_files(store))
    state = owned_files.build_state_base(root, previous)
    bases["state"] = Base("state", state, "", "", "", owned_files.state_files(state))
    return bases


# ---- mutations -----------------------------------------------------------------------

class Draw(Protocol):
    """Where a case's choices come from: hypothesis's `data.draw` or a random.Random."""

    def integer(self, low: int, high: int) -> int: ...


# Bytes that mean something to one of the parsers: CSV quoting and separators, text
# encodings, numbers at the edges of their types, protobuf text-format tokens, varints.
TOKENS = [b'"', b",", b"\n", b"\r\n", b"\r", b"\t", b" ", b"\x00", b"\xff", b"\xef\xbb\xbf",
          b"\xc3", b"\xe2\x82", b"-", b"1e999", b"nan", b"-inf", b"9223372036854775808",
          b"-1", b"0", b"", b"{", b"}", b"[", b"]", b":", b"#", b"\\", b"'", b"DT_STRING",
          b"DT_FLOAT", b"size: -1", b"dim { size: 0 }", b"sample_size: 0",
          b"RANDOM_WEIGHTED", b"LATEST_K", b"input_op_names: \"seed\"", b"\x80\x80\x80\x80",
          b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x0a\x00", b"\x12\x05", b"\x08",
          b"\x1a\xff\xff\xff\x0f", b"PAR1", b"\x1f\x8b", b"id", b"#id", b"source", b"target",
          b"timestamp", b"weight"]
KINDS = ("flip", "set", "insert", "delete", "truncate", "duplicate", "token", "swap_lines")


def mutate_bytes(data: bytes, draw: Draw, count: int) -> tuple[bytes, list[str]]:
    """`count` random edits of `data`; returns the bytes and a description of each."""
    out = bytearray(data)
    done = []
    for _ in range(count):
        kind = KINDS[draw.integer(0, len(KINDS) - 1)]
        n = len(out)
        at = draw.integer(0, max(n - 1, 0))
        if kind == "flip" and n:
            out[at] ^= 1 << draw.integer(0, 7)
        elif kind == "set" and n:
            out[at] = draw.integer(0, 255)
        elif kind == "insert":
            out[at:at] = bytes(draw.integer(0, 255) for _ in range(draw.integer(1, 4)))
        elif kind == "delete" and n:
            del out[at:at + draw.integer(1, 16)]
        elif kind == "truncate":
            del out[at:]
        elif kind == "duplicate" and n:
            piece = out[at:at + draw.integer(1, 64)]
            where = draw.integer(0, n)
            out[where:where] = piece
        elif kind == "token":
            token = TOKENS[draw.integer(0, len(TOKENS) - 1)]
            end = at + draw.integer(0, 3)  # replace a few bytes, or insert
            out[at:end] = token
        elif kind == "swap_lines":
            lines = bytes(out).split(b"\n")
            if len(lines) > 2:
                i, j = draw.integer(0, len(lines) - 1), draw.integer(0, len(lines) - 1)
                lines[i], lines[j] = lines[j], lines[i]
                out = bytearray(b"\n".join(lines))
        done.append(f"{kind}@{at}")
    return bytes(out), done


def _records(data: bytes) -> list[bytes] | None:
    """The payloads of a well-formed uncompressed TFRecord file, else None."""
    try:
        return list(tfrecord.iter_records(io.BytesIO(data), "fuzz"))
    except Exception:  # noqa: BLE001 - only asks whether the file is intact
        return None


def mutate_file(name: str, data: bytes, draw: Draw) -> tuple[bytes, list[str]]:
    """Mutations of one file: raw bytes; for TFRecord also one record's payload re-framed
    with valid CRCs; for GZIP also the inflated bytes, recompressed."""
    count = draw.integer(1, 4)
    layer = draw.integer(0, 2)
    if data[:2] == b"\x1f\x8b" and layer:
        inner = gzip.decompress(data)
        inner, done = mutate_file(name, inner, draw)
        return gzip.compress(inner, mtime=0), ["gunzip"] + done
    if data[:4] == b"PAR1" and data[-4:] == b"PAR1" and layer and len(data) > 12:
        return _mutate_parquet(data, draw, count, footer=layer == 1)
    records = _records(data) if layer and data else None
    if records:
        index = draw.integer(0, len(records) - 1)
        if layer == 2:   # the payload of one record, framing made valid again
            records[index], done = mutate_bytes(records[index], draw, count)
            done = [f"record {index}"] + done
        else:            # the length field of one record, CRC of the length made valid
            framed = [tfrecord.encode_record(r) for r in records]
            length = draw.integer(0, 2 ** 32 - 1) if draw.integer(0, 1) else len(
                records[index]) + draw.integer(-8, 8)
            length = max(0, length)
            head = struct.pack("<Q", length)
            framed[index] = head + struct.pack("<I", tfrecord.masked_crc32c(head)) + \
                framed[index][12:]
            return b"".join(framed), [f"record {index} length {length}"]
        return b"".join(tfrecord.encode_record(r) for r in records), done
    return mutate_bytes(data, draw, count)


def _mutate_parquet(data: bytes, draw: Draw, count: int, footer: bool
                    ) -> tuple[bytes, list[str]]:
    """Bytes changed in place (never moved, so every offset still points where it did)
    inside the Thrift footer (schema, row groups, column chunk offsets and statistics)
    or inside the pages before it (page headers, encoded and compressed values)."""
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer_start = max(4, len(data) - 8 - footer_length)
    low, high = (footer_start, len(data) - 9) if footer else (4, footer_start - 1)
    if high < low:
        return data, ["parquet: no such region"]
    return mutate_in_place(data, low, high, draw, count,
                           f"parquet {'footer' if footer else 'page'} byte")


def mutate_in_place(data: bytes, low: int, high: int, draw: Draw, count: int, what: str
                    ) -> tuple[bytes, list[str]]:
    """`count` bytes in data[low:high + 1] flipped or set, none moved (offsets and sizes
    stay valid)."""
    out = bytearray(data)
    done = []
    for _ in range(count):
        at = draw.integer(low, high)
        if draw.integer(0, 1):
            out[at] ^= 1 << draw.integer(0, 7)
        else:
            out[at] = (0, 0x7F, 0x80, 0xFF, draw.integer(0, 255))[draw.integer(0, 4)]
        done.append(f"{what} {at}")
    return bytes(out), done


# ---- running a command in this process ---------------------------------------------

class Hang(BaseException):
    """A command ran past its time box (BaseException: product code may not catch it)."""


@dataclasses.dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    crash: str | None = None   # the traceback of an exception that escaped `main`


def _mains() -> dict[str, Callable[[list[str]], int]]:
    from pipelines import convert, inspect_output, sample, sample_check, sample_stats

    return {"sample": sample.main, "unigraph-convert": convert.main,
            "sample-check": sample_check.main, "sample-stats": sample_stats.main,
            "sample-inspect": inspect_output.main, "read-batches": read_batches_main}


def read_batches_main(argv: list[str]) -> int:
    """The batched decoder's readers as a command: an output folder read in batches of
    2 (in order, shuffled) as merged GraphTensors, and through SampleDataset as PyG
    HeteroData when torch is installed; a problem of input is one line, status 2."""
    import sys

    import numpy as np

    from sampler.graph_tensor.batch_codec import BatchDecoder
    from sampler.output.batches import read_batches
    from sampler.output.folder import open_samples
    from unigraph.errors import SamplerError, message_line

    try:
        samples = open_samples(argv[0])
        shards = range(len(samples.files))
        for shuffle in (0, 3):
            for _, batch in read_batches(samples.files, shards, BatchDecoder(samples.schema),
                                         batch_size=2, shuffle_buffer=shuffle,
                                         rng=np.random.default_rng(0)):
                batch.graph()
        try:
            from sampler.torch import SampleDataset, Vocabulary
        except SamplerError:  # no [torch] extra
            return 0
        for batch_size in (None, 2):
            for _ in SampleDataset(argv[0], batch_size=batch_size, vocabulary=Vocabulary()):
                pass
    except SamplerError as e:
        print(f"read-batches: error: {message_line(e)}", file=sys.stderr)
        return 2
    return 0


def run_command(command: str, argv: list[str], timeout: float = TIMEOUT_S) -> Outcome:
    """Runs a command's `main` here, stdout and stderr captured, time-boxed."""
    out, err = io.StringIO(), io.StringIO()

    def alarm(signum, frame):
        raise Hang(f"{command} ran for more than {timeout:.0f} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = _mains()[command](argv)
            except SystemExit as e:   # argparse's own usage errors
                code = e.code if isinstance(e.code, int) else 2
            except Hang:
                raise
            except BaseException:  # noqa: BLE001 - the crash is the finding
                return Outcome(None, out.getvalue(), err.getvalue(), traceback.format_exc())
    except Hang as e:
        return Outcome(None, out.getvalue(), err.getvalue(), f"hang: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(code, out.getvalue(), err.getvalue())


# ---- one case ---------------------------------------------------------------------------

READERS = ("sample-check", "sample-stats", "sample-inspect", "read-batches")
INSPECT_FLAGS = [["--index", "1"], ["--seed-id", "i3", "--json"], ["--context", "seed_id=i1",
                 "--dot"], ["--index", "2", "--max-items", "0"]]


@dataclasses.dataclass
class Case:
    base: str
    file: str
    mutations: list[str]
    command: str
    variant: int = 0   # which flags, where a command has several sets (sample-inspect)
    engine: str = "memory"   # `sample`'s engine
    seeds: bool = True       # `sample` with --seeds (without: every node is a seed)


def _digest(folder: str) -> dict[str, str]:
    found = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, folder)] = hashlib.sha1(f.read()).hexdigest()
    return found


def draw_case(bases: dict[str, Base], draw: Draw, beam_one_in: int = 0
              ) -> tuple[Case, bytes]:
    """A case: which base, file, command; returns it with the mutated bytes. One `sample`
    run of a table base in `beam_one_in` runs the Beam engine (0: never; 1: always)."""
    names = sorted(bases)
    base = bases[names[draw.integer(0, len(names) - 1)]]
    file = base.files[draw.integer(0, len(base.files) - 1)]
    with open(os.path.join(base.folder, file), "rb") as f:
        data = f.read()
    if base.name == "store" and file.endswith(".npy") and draw.integer(0, 1):
        mutated, done = owned_files.mutate_array(data, draw)
    else:
        mutated, done = mutate_file(file, data, draw)
    if base.name == "output":
        command = READERS[draw.integer(0, len(READERS) - 1)]
    elif base.name == "state":
        command = "sample"
    elif file in (base.spec, base.seeds) or base.name == "link":
        command = "sample"
    else:  # a table base, or the store (unigraph-convert --verify)
        command = ("sample", "unigraph-convert")[draw.integer(0, 1)]
    case = Case(base.name, file, done, command, draw.integer(0, 3))
    if command == "sample" and base.name not in ("store", "state", "output"):
        case.seeds = base.name == "link" or file == base.seeds or draw.integer(0, 2) > 0
        if beam_one_in and draw.integer(0, beam_one_in - 1) == 0:
            case.engine = "beam"
    return case, mutated


def run_case(bases: dict[str, Base], case: Case, mutated: bytes, work: str,
             previous_digest: dict[str, str]) -> tuple[Outcome, list[str]]:
    """Runs one case in a fresh copy of its base under `work`; (outcome, violations)."""
    base = bases[case.base]
    if os.path.exists(work):
        shutil.rmtree(work)
    if case.base == "state":
        return _run_state_case(bases, case, mutated, work)
    folder = os.path.join(work, "in")
    shutil.copytree(base.folder, folder)
    with open(os.path.join(folder, case.file), "wb") as f:
        f.write(mutated)
    out = os.path.join(work, "out")
    if case.base == "store":
        if case.command == "sample":
            shutil.copytree(bases["output"].folder, out)
        command, argv = owned_files.store_argv(case, folder, out, bases["csv"])
        outcome = run_command(command, argv)
        with open(os.path.join(base.folder, case.file), "rb") as f:
            original = f.read()
        return outcome, (violations(case, outcome, out, previous_digest)
                         + owned_files.store_violations(case, outcome, original, mutated))
    if case.command == "sample":
        shutil.copytree(bases["output"].folder, out)
        argv = ["--graph", os.path.join(folder, base.schema),
                "--spec", os.path.join(folder, base.spec),
                "--output", out + "/", "--quiet", "--engine", case.engine]
        argv += ["--seeds", os.path.join(folder, base.seeds)] if case.seeds else []
        argv += ["--workers", "1"] if case.engine == "memory" else []
        if case.base == "link":
            argv += ["--negatives", "1"]
    elif case.command == "unigraph-convert":
        fmt = {"csv": "parquet", "parquet": "tfrecord"}.get(case.base, "csv")
        argv = ["--graph", os.path.join(folder, base.schema), "--output", out,
                "--format", fmt]
    elif case.command == "sample-check":
        argv = [folder]
    elif case.command == "sample-stats":  # even variants: with the HTML page
        argv = [folder, "--workers", "1", "--quiet"] + ["--no-html"] * (case.variant % 2)
    elif case.command == "read-batches":
        argv = [folder]
    else:
        argv = [folder] + INSPECT_FLAGS[case.variant % len(INSPECT_FLAGS)]
    outcome = run_command(case.command, argv)
    found = violations(case, outcome, out, previous_digest)
    if case.command == "sample-stats" and outcome.code == 0 and not case.variant % 2:
        found += html_violations(os.path.join(folder, "stats", "index.html"))
    return outcome, found


def _run_state_case(bases: dict[str, Base], case: Case, mutated: bytes, work: str
                    ) -> tuple[Outcome, list[str]]:
    """`sample` into a copy of the state base (the output folder), its inputs a copy of
    the CSV base (so that a run obeying a file could not touch the shared bases)."""
    csv_base = bases["csv"]
    inputs, out = os.path.join(work, "in"), os.path.join(work, "out")
    shutil.copytree(csv_base.folder, inputs)
    shutil.copytree(bases["state"].folder, out)
    with open(os.path.join(out, case.file), "wb") as f:
        f.write(mutated)
    before_out, before_inputs = _digest(out), _digest(inputs)
    lock = os.path.join(out, ".sample-lock")
    lock_before = open(lock, "rb").read() if os.path.isfile(lock) else None
    outcome = run_command("sample", [
        "--graph", os.path.join(inputs, csv_base.schema),
        "--spec", os.path.join(inputs, csv_base.spec),
        "--seeds", os.path.join(inputs, csv_base.seeds), "--output", out + "/",
        "--workers", "1", "--quiet"])
    found = violations(case, outcome, out, None)
    found += owned_files.state_violations(outcome, out, before_out, inputs, before_inputs,
                                          _digest, lock_before)
    return outcome, found


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.csp = set(), None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy":
            self.csp = attrs.get("content")


PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "table",
             "tr", "th", "td", "code", "p", "div", "img", "span", "br"}


def html_violations(path: str) -> list[str]:
    """sample-stats' page: only the tags it writes itself (every value escaped), and its
    Content-Security-Policy."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    parser = _Tags()
    parser.feed(page)
    found = []
    if parser.tags - PAGE_TAGS:
        found.append(f"index.html: tags from the data: {sorted(parser.tags - PAGE_TAGS)[:3]}")
    if not parser.csp or "default-src 'none'" not in parser.csp:
        found.append("index.html: no Content-Security-Policy")
    return found


def violations(case: Case, outcome: Outcome, out: str,
               previous_digest: dict[str, str]) -> list[str]:
    """What of the property a run broke (empty: none)."""
    found = []
    if outcome.crash is not None:
        first = outcome.crash.strip().splitlines()[-1]
        return [f"crash: {first}"]
    if outcome.code not in (0, 1, 2):
        found.append(f"exit status {outcome.code}")
    err_lines = outcome.stderr.strip().splitlines()
    if "Traceback" in outcome.stderr:
        found.append("a traceback on stderr")
    if outcome.code != 0 and len(err_lines) > 3:
        found.append(f"{len(err_lines)} lines on stderr")
    if outcome.code == 2 and case.file not in outcome.stderr and \
            not _names_input(outcome, case):
        found.append("the message names no input file")
    if case.command == "sample" and outcome.code != 0 and previous_digest is not None:
        if _digest(out) != previous_digest:
            found.append("the previous output changed")
    if case.command == "unigraph-convert" and outcome.code != 0 and os.path.exists(out) \
            and os.listdir(out):
        found.append(f"partial output left: {sorted(os.listdir(out))[:3]}")
    return found


def _names_input(outcome: Outcome, case: Case | None = None) -> bool:
    """A message that names another file of the input (a schema's mutation may make it
    name a table it now points at) still names a file; for a state file, the output
    folder it was found in."""
    text = outcome.stderr
    folders = ("/in", "/out") if case is not None and case.base == "state" else ("/in",)
    return any(f"{f}{end}" in text for f in folders for end in ("/", ":", " "))


def crash_signature(case: Case, outcome: Outcome, problems: list[str]) -> str:
    """What makes two findings the same bug: command, kind, and where it was raised."""
    if outcome.crash and not outcome.crash.startswith("hang"):
        frames = [line.strip() for line in outcome.crash.splitlines()
                  if line.strip().startswith("File ")]
        where = frames[-1] if frames else ""
        return f"{case.command}: {problems[0]} at {where}"
    return f"{case.command}: {'; '.join(p.split(':')[0] for p in problems)}"
