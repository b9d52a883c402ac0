"""Which Beam runner a job runs on, its options, and running it.

Without `--runner`, Beam's FnApiRunner runs the job in-process, chosen
explicitly: Beam 2.77's DirectRunner first tries to download and start Prism,
which fails without network after a delay. Any `--runner` on the command line wins.

`--runner DaskRunner` names Beam's released runner for a dask.distributed cluster
(`--dask_client_address HOST:PORT`; without it Dask starts a local cluster). Its
Create puts 128 elements into one Dask partition unless told otherwise, and a
partition is one task all the way down (the runner's Reshuffle does nothing): all of
a table's files would be read, and all shards written, by one task. So unless the
user sets `--dask_npartitions` or `--dask_partition_size`, each element of a Create
(a file, a BigQuery stream, an output shard) is its own partition, and the stages
after it run as that many tasks. The runner leaves its Dask client open; it is
closed when the job ends. When every worker is paused at its memory limit the
runner would wait forever (README, "Memory on Dask"): a watch cancels the job after
SAMPLER_DASK_STALL_S seconds of that (default 120) and `sample` says so in one line.

`--runner DataflowRunner`: the workers need this project's code. Unless the user
ships it (`--setup_file`, or an image with it installed, `--sdk_container_image`),
the project's own setup.py is staged as `--setup_file`. With Beam's
`--dry_run=True` Dataflow builds the job and submits nothing; `write_job_description`
saves what it built (the Dataflow job, the Beam pipeline proto with every step,
coder and staged artifact, the options) as one JSON file.
"""
from __future__ import annotations

import io
import json
import os
import re
import tarfile
import tempfile
import threading
import time
import traceback

import apache_beam as beam
from apache_beam.options.pipeline_options import (DebugOptions, DirectOptions,
                                                  GoogleCloudOptions, PipelineOptions,
                                                  SetupOptions, StandardOptions, TestOptions,
                                                  TypeOptions, WorkerOptions)
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from sampler.beam.interrupts import quiet_after_interrupt
from unigraph.beam.lean_import import with_dataflow_client
from unigraph.beam.runners import DASK_RUNNER
from unigraph.storage import paths
from unigraph.storage.paths import file_stem
from unigraph.errors import SamplerError, one_line
from unigraph.interrupts import interrupted_in


RUNNER_NAMES = {"DaskRunner": DASK_RUNNER}  # short names Beam's runner registry lacks


class _Options(PipelineOptions):
    """PipelineOptions whose views are made once per options class.

    Beam asks the pipeline's options for a TypeOptions view each time a transform is
    applied (about 560 times for a job at scale 0.01), and each view is a new argparse
    parse of the flags: 2-4 ms each, a second of CPU per job. A view holds no state of
    its own (it reads and writes the options' shared `_all_options`), so one view per
    class serves every ask; it is made again if `_all_options` is replaced."""

    def view_as(self, cls):
        views = self.__dict__.setdefault("_views", {})  # not __setattr__: Beam's refuses
        view = views.get(cls)
        if view is None or view._all_options is not self._all_options:
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_views", None)
        return state


def make_pipeline(beam_args: list[str]) -> beam.Pipeline:
    options = _Options(beam_args)
    standard = options.view_as(StandardOptions)
    standard.runner = RUNNER_NAMES.get(standard.runner, standard.runner)
    if standard.runner == DASK_RUNNER:
        _dask_partitions(options)
    if _is_dataflow(standard.runner):
        with_dataflow_client()  # unigraph.beam.lean_import left it out
        _stage_project_code(options)
    if not any(a.lstrip("-").startswith(("pipeline_type_check", "no_pipeline_type_check"))
               for a in beam_args):
        # Our elements are batches of numpy arrays, pickled; Beam's static type checks find
        # nothing to check here and cost about a second per run (construction and run).
        options.view_as(TypeOptions).pipeline_type_check = False
    if standard.runner:
        try:
            return beam.Pipeline(options=options)
        except ValueError as e:  # Beam's option validation: every problem, one line
            if "validation" not in str(e):
                raise
            problems = "; ".join(line.strip() for line in str(e).splitlines()[1:]
                                 if line.strip())
            raise SamplerError(f"Beam pipeline options: {problems}") from None
    direct = options.view_as(DirectOptions)
    if not any(a.startswith("--direct_num_workers") for a in beam_args):
        direct.direct_num_workers = 1
    reuse_freed_memory()
    return beam.Pipeline(runner=FnApiRunner(), options=options)


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
KEEP_FREED_BYTES = 1 << 30


def reuse_freed_memory() -> bool:
    """Makes glibc's malloc serve large blocks from its heap and keep up to
    KEEP_FREED_BYTES of freed memory there, for the in-process runner.

    That runner copies every stage's data several times in fresh buffers (encoding it
    into one stream per stage, wrapping it in a protobuf message, reading it back, each
    a new bytes object of up to hundreds of MB). glibc maps each block over 32 MB
    (and, by default, many smaller ones) with its own mmap and unmaps it when freed,
    so the kernel faults in and zeroes every page of every copy: at scale 0.04 about
    two million page faults, 8 of the job's 37 CPU-s in the kernel. Served from the
    heap, the freed blocks are reused. Peak memory rises by less than a tenth
    (docs/engines.md). Not on Linux with glibc, or where the user set glibc's malloc
    tunables (GLIBC_TUNABLES), nothing changes. Returns whether it applied."""
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                            KEEP_FREED_BYTES))


def _is_dataflow(runner) -> bool:
    return runner is not None and str(runner).rsplit(".", 1)[-1] in ("DataflowRunner",
                                                                     "TestDataflowRunner")


def is_dry_run(beam_args: list[str]) -> bool:
    """Beam's --dry_run: the runner builds the job and runs (submits) nothing."""
    return bool(PipelineOptions(beam_args).view_as(TestOptions).dry_run)


def project_setup_file() -> str | None:
    """This project's setup.py, where the code runs from a source tree (an editable
    install, a clone); None when it was installed from a wheel."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "setup.py")
    return path if os.path.isfile(path) else None


def _stage_project_code(options: PipelineOptions) -> None:
    setup = options.view_as(SetupOptions)
    if setup.setup_file or options.view_as(WorkerOptions).sdk_container_image:
        return
    path = project_setup_file()
    if path is None:
        raise SamplerError("the Dataflow workers need the sampler's code: give "
                           "--sdk_container_image (an image with it installed, see the "
                           "Dockerfile) or --setup_file")
    setup.setup_file = path


def write_job_description(result, beam_args: list[str]) -> tuple[str, int, list[str] | None]:
    """A Dataflow dry run's job as JSON at --dataflow_job_file (local or gs://), else in
    a new file of the temporary folder; returns (where, number of leaf steps, the requirements the
    workers install with the staged package)."""
    from google.protobuf import json_format

    job = result.job
    options = job.options
    pipeline = json_format.MessageToDict(job.proto_pipeline)
    steps = sum(1 for t in job.proto_pipeline.components.transforms.values()
                if not t.subtransforms)
    description = {"dataflow_job": json.loads(job.json()), "pipeline": pipeline,
                   "options": options.get_all_options(drop_default=True),
                   "leaf_steps": steps,
                   "worker_requirements": staged_requirements(job.proto_pipeline)}
    text = json.dumps(description, indent=1, sort_keys=True).encode("utf-8")
    where = options.view_as(DebugOptions).dataflow_job_file
    if where:  # the user's own choice of file
        with paths.open_binary(where, "wb") as f:
            f.write(text)
        return where, steps, description["worker_requirements"]
    # A file of its own in the temporary folder: created exclusively under a name no one
    # can guess (mkstemp: O_EXCL, mode 0600), never one that was there or a link planted
    # for the job's name; the job's name only labels it (one file name component).
    name = file_stem(options.view_as(GoogleCloudOptions).job_name or "sample", "sample")
    fd, where = tempfile.mkstemp(prefix=f"{name}.", suffix=".dataflow-job.json")
    with os.fdopen(fd, "wb") as f:
        f.write(text)
    return where, steps, description["worker_requirements"]


def staged_requirements(pipeline_proto) -> list[str] | None:
    """What the workers will pip-install with the staged package (`--setup_file`): the
    base requirements of the source distribution Beam built and staged as
    workflow.tar.gz, read from that archive. None when no package is staged (an image
    carries the code) or the archive is no longer where the job names it."""
    from apache_beam.portability import common_urns
    from apache_beam.portability.api import beam_runner_api_pb2 as api

    for environment in pipeline_proto.components.environments.values():
        for artifact in environment.dependencies:
            if (artifact.role_urn != common_urns.artifact_roles.STAGING_TO.urn
                    or api.ArtifactStagingToRolePayload.FromString(
                        artifact.role_payload).staged_name != "workflow.tar.gz"):
                continue
            if artifact.type_urn == common_urns.artifact_types.FILE.urn:
                where = api.ArtifactFilePayload.FromString(artifact.type_payload).path
            elif artifact.type_urn == common_urns.artifact_types.URL.urn:
                where = api.ArtifactUrlPayload.FromString(artifact.type_payload).url
            else:
                return None
            try:
                with paths.open_binary(where) as f:
                    return _sdist_requirements(f.read())
            except (OSError, tarfile.TarError):
                return None
    return None


def _sdist_requirements(archive: bytes) -> list[str]:
    """The unconditional requirements (no extra) in a source distribution's egg-info."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.name.endswith(".egg-info/requires.txt"):
                text = tar.extractfile(member).read().decode("utf-8")
                base = text.split("\n[", 1)[0]  # sections after the first are extras
                return [line.strip() for line in base.splitlines() if line.strip()]
    return []


def _dask_partitions(options: PipelineOptions) -> None:
    from apache_beam.runners.dask.dask_runner import DaskOptions  # imports dask

    dask = options.view_as(DaskOptions)
    if dask.npartitions is None and dask.partition_size is None:
        dask.partition_size = 1  # one Create element per Dask partition (module docstring)


# Errors of ours, and environment errors, as a worker process reports them: Beam wraps a
# DoFn's exception in its own, with the worker's traceback as text.
_WORKER_ERROR = re.compile(
    r"^\s*(?:[\w.]+\.)?(?P<kind>SamplerError|SchemaError|SpecError|TableError|GraphTensorError"
    r"|SamplesError|PermissionError|FileNotFoundError|IsADirectoryError|NotADirectoryError"
    r"|OSError): (?P<message>.+)$", re.M)
_STEP_SUFFIX = re.compile(r" \[while running '[^']*'\]$")


def run_pipeline(pipeline: beam.Pipeline):
    """Runs a pipeline to the end and returns Beam's result. A bad-input or environment
    error raised in a worker reaches the caller as one SamplerError line (not Beam's
    wrapped traceback); any other failure, a bug, keeps its traceback."""
    try:
        # A Ctrl-C reaches Beam's worker processes and threads too: they print nothing
        # after it (sampler.beam.interrupts), and `sample` prints its one line.
        with quiet_after_interrupt():
            result = pipeline.run()
            watch = _DaskStallWatch.start(result)
            try:
                result.wait_until_finish()
            except BaseException:
                if watch is not None and watch.stalled:  # what cancelling raised, if any
                    raise SamplerError(watch.message()) from None
                raise
            finally:
                if watch is not None:
                    watch.stop()
                _close_client(result)
        if watch is not None and watch.stalled:  # cancelled futures may just end the wait
            raise SamplerError(watch.message())
        return result
    except SamplerError as e:
        raise SamplerError(_STEP_SUFFIX.sub("", str(e))) from None
    except OSError as e:
        raise SamplerError(_STEP_SUFFIX.sub("", one_line(e))) from None
    except Exception as e:
        # Ctrl-C (or SIGTERM) inside a step: Beam wraps the KeyboardInterrupt in its own
        # RuntimeError; it is raised again as what it is, one line and 130 in `sample`.
        if interrupted_in(e) or str(e).startswith("KeyboardInterrupt"):
            raise KeyboardInterrupt from None
        message = killed_worker(e) or worker_error(e)
        if message is None:
            raise
        raise SamplerError(message) from None


class _DaskStallWatch:
    """Polls the Dask scheduler while a DaskRunner job runs. If every worker stays paused
    (past 80% of its memory limit) for `seconds`, nothing can run or be freed on the
    released runner, so the job is cancelled and `stalled` set."""

    def __init__(self, result, seconds: float):
        self.result, self.seconds = result, seconds
        self.stalled, self.limits = False, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="dask-stall-watch",
                                        daemon=True)
        self._thread.start()

    @staticmethod
    def start(result) -> "_DaskStallWatch | None":
        if type(result).__name__ != "DaskRunnerResult":
            return None
        return _DaskStallWatch(result, float(os.environ.get("SAMPLER_DASK_STALL_S", "120")))

    def _watch(self) -> None:
        paused_since = None
        while not self._stop.wait(1.0):
            try:
                workers = list(self.result.client.scheduler_info()["workers"].values())
            except Exception:  # noqa: BLE001  the client is closing: nothing to watch
                return
            if not workers or any(w.get("status") != "paused" for w in workers):
                paused_since = None
                continue
            paused_since = paused_since or time.monotonic()
            if time.monotonic() - paused_since >= self.seconds:
                self.stalled = True
                self.limits = sorted({int(w.get("memory_limit") or 0) for w in workers})
                self.result.cancel()
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def message(self) -> str:
        limits = ", ".join(f"{limit >> 20} MiB" for limit in self.limits)
        return (f"every Dask worker was paused at its memory limit ({limits}) for "
                f"{self.seconds:g} s, so the job was cancelled: on Beam's released "
                f"DaskRunner the graph's working set must fit in the workers' memory: see "
                f"README, \"Memory on Dask\"")


def _close_client(result) -> None:
    """The DaskRunner's result holds the Dask client it opened; nothing else closes it."""
    client = getattr(result, "client", None)
    if client is not None and hasattr(client, "close"):
        client.close()


def killed_worker(error: BaseException) -> str | None:
    """The one-line message for dask.distributed's KilledWorker: a task's worker died
    (most often its nanny ended it at 95% of its memory limit) more times than Dask
    retries. Matched by name, so that Dask need not be installed to run this module."""
    if type(error).__name__ != "KilledWorker":
        return None
    task = error.args[0] if error.args else "a task"
    step = task[0] if isinstance(task, tuple) and task else task
    return (f"a Dask worker died each time it ran the task {step!s} (most often: it passed its "
            f"memory limit); on Beam's released DaskRunner the graph's working set must "
            f"fit in the workers' memory: see README, \"Memory on Dask\"")


def worker_error(error: BaseException) -> str | None:
    """The one-line message of the last SamplerError or OSError in `error`'s text."""
    text = "\n".join(traceback.format_exception(error))
    matches = list(_WORKER_ERROR.finditer(text))
    if not matches:
        return None
    return _STEP_SUFFIX.sub("", matches[-1]["message"].strip())
