"""gs:// objects through google-cloud-storage, with bounded retries and one-line errors.

Every gs:// operation of the project (tables read by both engines, shards and reports
written, the output commit and its lock) comes here through `paths`. The client
retries what Google's client library deems transient (429, 5xx, connection resets,
read timeouts, truncated bodies) with exponential backoff (1 s, doubling, at most 60 s
apart), the whole operation bounded by SAMPLER_GCS_RETRY_S seconds (default 120, the
library's own default), each request by SAMPLER_GCS_TIMEOUT_S (default 60: a read that
stalls longer is retried). Past the bound the last error is raised as an OSError of
one line naming the object (FileNotFoundError for a missing one), which every command
prints as one line. Reads and writes of a whole stream are retried chunk by chunk
(ranged reads, resumable uploads), so a reset costs one chunk, not the file.

`create_if_absent` and `delete_if_generation` use GCS preconditions (ifGenerationMatch)
so that two writers racing for one object cannot both win: the output lock
(sampler/output/lock.py) is built on them.

STORAGE_EMULATOR_HOST (the client library's own switch) points the client at an
emulator, anonymously; otherwise application-default credentials.
"""
from __future__ import annotations

import functools
import os
import re
import sys
from typing import Iterator

RETRY_ENV, TIMEOUT_ENV = "SAMPLER_GCS_RETRY_S", "SAMPLER_GCS_TIMEOUT_S"
READ_CHUNK = 16 << 20   # bytes per ranged read (Beam's gcsio read buffer)
WRITE_CHUNK = 16 << 20  # bytes per resumable upload request (a multiple of 256 KiB)


def split(path: str) -> tuple[str, str]:
    """gs://bucket/name -> (bucket, name)."""
    if not path.startswith("gs://"):
        raise OSError(f"{path}: not a gs:// path")
    bucket, _, name = path[len("gs://"):].partition("/")
    if not bucket:
        raise OSError(f"{path}: no bucket named")
    return bucket, name


def _seconds(env: str, default: float) -> float:
    try:
        return float(os.environ.get(env, default))
    except ValueError:
        return default


def retry():
    """The retry policy of every call: the library's predicate, our bound."""
    from google.cloud.storage.retry import DEFAULT_RETRY

    return DEFAULT_RETRY.with_timeout(_seconds(RETRY_ENV, 120.0))


def timeout() -> float:
    return _seconds(TIMEOUT_ENV, 60.0)


@functools.lru_cache(maxsize=None)
def _client_for(pid: int, emulator: str | None):
    from google.cloud import storage

    if emulator:
        from google.auth.credentials import AnonymousCredentials

        _skip_beam_credentials()
        return storage.Client(project="emulator", credentials=AnonymousCredentials())
    try:
        # Object reads and writes bill the bucket's project: none needs to be found.
        return storage.Client(project=None)
    except Exception as e:  # noqa: BLE001 - google.auth's DefaultCredentialsError and kin
        raise OSError(f"gs://: no Google Cloud credentials ({_one_line(e)}); run "
                      f"`gcloud auth application-default login` or set "
                      f"GOOGLE_APPLICATION_CREDENTIALS") from None


def client():
    """One client per process (a forked worker makes its own: connections are not
    shared across a fork)."""
    return _client_for(os.getpid(), os.environ.get("STORAGE_EMULATOR_HOST"))


def _skip_beam_credentials() -> None:
    """Beam's own gcsio (Dataflow staging, temp files) looks for credentials for about
    20 s before it connects anonymously to an emulator; tell it there are none."""
    if "apache_beam" not in sys.modules:
        return
    try:
        from apache_beam.internal.gcp import auth
    except ImportError:
        return
    cache = getattr(auth, "_Credentials", None)
    if cache is None or not hasattr(cache, "_credentials_init"):
        return
    with cache._credentials_lock:
        cache._credentials = None
        cache._credentials_init = True


def _one_line(e) -> str:
    return " ".join(str(e).split())


def translated(path: str, error: BaseException) -> OSError:
    """A client library error as an OSError of one line naming `path`."""
    from google.api_core import exceptions

    if isinstance(error, exceptions.NotFound):
        return FileNotFoundError(f"{path}: no such object")
    if isinstance(error, exceptions.RetryError):
        cause = error.cause if error.cause is not None else error
        return OSError(f"{path}: object store still failing after "
                       f"{_seconds(RETRY_ENV, 120.0):g} s of retries "
                       f"({RETRY_ENV}): {_describe(cause)}")
    return OSError(f"{path}: object store error: {_describe(error)}")


def _describe(error: BaseException) -> str:
    text = _one_line(error) or type(error).__name__
    return text if len(text) <= 300 else text[:296] + " ..."


class _Errors:
    """Turns the client library's exceptions into one-line OSErrors naming `path`."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is None or not isinstance(error, Exception):
            return False   # KeyboardInterrupt and the like go on as they are
        if isinstance(error, OSError) and str(error).startswith("gs://: "):
            raise OSError(f"{self.path}: {str(error)[len('gs://: '):]}") from None
        if isinstance(error, OSError) and str(error).startswith("gs://"):
            return False   # ours already
        raise translated(self.path, error) from None


def _blob(path: str):
    bucket, name = split(path)
    return client().bucket(bucket).blob(name)


def exists(path: str) -> bool:
    with _Errors(path):
        return _blob(path).exists(retry=retry(), timeout=timeout())


def size(path: str) -> int:
    bucket, name = split(path)
    with _Errors(path):
        blob = client().bucket(bucket).get_blob(name, retry=retry(), timeout=timeout())
    if blob is None:
        raise FileNotFoundError(f"{path}: no such object")
    return int(blob.size)


def delete(path: str) -> None:
    """Deletes the object; one already gone counts as deleted (a retried delete whose
    first answer was lost finds nothing to delete)."""
    from google.api_core import exceptions

    with _Errors(path):
        try:
            _blob(path).delete(retry=retry(), timeout=timeout())
        except exceptions.NotFound:
            pass


def copy(source: str, destination: str) -> None:
    """Server-side copy (a rewrite, in as many calls as the object needs)."""
    with _Errors(source):
        target = _blob(destination)
        token, _, _ = target.rewrite(_blob(source), retry=retry(), timeout=timeout())
        while token is not None:
            token, _, _ = target.rewrite(_blob(source), token=token, retry=retry(),
                                         timeout=timeout())


def list_names(prefix: str) -> list[str]:
    """gs:// paths of every object whose name starts with `prefix`'s name."""
    bucket, name = split(prefix)
    with _Errors(prefix):
        return [f"gs://{bucket}/{blob.name}" for blob in client().list_blobs(
            bucket, prefix=name, retry=retry(), timeout=timeout())]


def _pattern_regex(pattern: str) -> re.Pattern:
    """`*` within one path component, `**` across them, `?` one character, `[...]` a set."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def match(pattern: str) -> list[str]:
    """gs:// paths of the objects a glob matches, sorted."""
    literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    regex = _pattern_regex(pattern)
    return sorted(p for p in list_names(literal) if regex.match(p))


def open_read(path: str):
    """A binary stream of the object, read in ranged requests, each retried."""
    from google.cloud.storage.fileio import BlobReader

    with _Errors(path):
        blob = _blob(path)
        blob.reload(retry=retry(), timeout=timeout())  # size and generation: a consistent read
        reader = BlobReader(blob, chunk_size=READ_CHUNK, retry=retry(), raw_download=True,
                            timeout=timeout())
    return _Stream(reader, path, reading=True)


def open_write(path: str):
    """A binary stream into the object: a resumable upload, each request retried; the
    object exists (whole) only once the stream is closed."""
    from google.cloud.storage.fileio import BlobWriter

    with _Errors(path):
        writer = BlobWriter(_blob(path), chunk_size=WRITE_CHUNK, ignore_flush=True,
                            retry=retry(), timeout=timeout())
    return _Stream(writer, path, reading=False)


class _Stream:
    """A file object whose every call turns the library's errors into one-line OSErrors."""

    def __init__(self, inner, path: str, reading: bool):
        self._inner, self._path, self._reading = inner, path, reading

    def __getattr__(self, name):
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            with _Errors(self._path):
                return attribute(*args, **kwargs)
        return call

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.read, b"")

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        # A write that failed is abandoned, never closed: closing would complete the
        # upload, and a partial object would appear under the name.
        if kind is None or self._reading:
            self.close()
        return False


# ---- preconditions: the output lock's primitives ----------------------------------------

def create_if_absent(path: str, data: bytes) -> int | None:
    """Writes the object only if no object has that name: its generation, or None if
    one has."""
    from google.api_core import exceptions

    with _Errors(path):
        blob = _blob(path)
        try:
            blob.upload_from_string(data, if_generation_match=0, retry=retry(),
                                    timeout=timeout())
        except exceptions.PreconditionFailed:
            return None
    return int(blob.generation) if blob.generation is not None else 0


def read_with_generation(path: str) -> tuple[bytes, int] | None:
    """(content, generation) of an object, or None if there is none."""
    from google.api_core import exceptions

    bucket, name = split(path)
    with _Errors(path):
        blob = client().bucket(bucket).get_blob(name, retry=retry(), timeout=timeout())
        if blob is None:
            return None
        generation = int(blob.generation or 0)  # read first: the download rewrites it
        try:
            data = blob.download_as_bytes(if_generation_match=generation or None,
                                          retry=retry(), timeout=timeout())
        except (exceptions.NotFound, exceptions.PreconditionFailed):
            return None   # replaced or deleted in between: the caller looks again
    return data, generation


def delete_if_generation(path: str, generation: int) -> bool:
    """Deletes the object only if it is still that generation; False if it changed or
    is gone."""
    from google.api_core import exceptions

    with _Errors(path):
        try:
            _blob(path).delete(if_generation_match=generation or None, retry=retry(),
                               timeout=timeout())
        except (exceptions.NotFound, exceptions.PreconditionFailed):
            return False
    return True
