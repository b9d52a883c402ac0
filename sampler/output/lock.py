"""One `sample` run at a time per output folder: the lock `OUT/.sample-lock`.

The lock file names its holder (pid, host, start time, run id) for the messages; what
makes it a lock differs by where OUT is:

- **A local folder**: the holder keeps the file open with `flock(LOCK_EX)` for the
  whole run. The kernel drops that lock when the process ends, however it ends
  (kill -9 included), so a lock file nobody holds is stale by definition and the next
  run takes it over, whatever pid it names; a second run while the first lives is
  refused at once, in one line naming the holder. The holder deletes the file while
  it still holds the lock; a run that opened the old file just before takes the lock
  on a deleted file, sees that the name now leads elsewhere, and tries again.
  The file is written only by the run that created it (`O_EXCL`) and never opened
  through a symbolic link (`O_NOFOLLOW`), nor when it is not a regular file of one
  name: a stale lock is deleted (its flock held) and created afresh, so a link or a
  hard link planted there can never make a run write into another file.
  A lock written by a run on another host (a shared NFS folder, where flock may be
  local to each machine) is never guessed stale: the message says to delete it if
  that run is gone.
- **gs://**: objects have no locks; the lock object is created only if absent
  (`ifGenerationMatch=0`), so of two runs racing for it exactly one wins, and a stale
  one (its pid dead on this host) is deleted only at the generation that was read
  (`ifGenerationMatch=<that>`), so two runs taking over one stale lock cannot both
  succeed. A lock left by a killed run on another machine cannot be told from a live
  one from here (no heartbeat: a run may hold a folder for hours on Dataflow), so it
  is refused with the command that removes it. The GCS emulator the tests use ignores
  preconditions; there the lock is check-then-create (the race is GCS's to close).
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import socket
import stat
import time

from unigraph.encoding import json_data
from unigraph.errors import SamplerError
from unigraph.storage import gcs, paths

LOCK_FILE = ".sample-lock"
_ATTEMPTS = 8  # rounds of "the lock changed under us" before giving up
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclasses.dataclass
class Lock:
    folder: str
    path: str
    fd: int | None = None            # local: the open, flock-ed file
    generation: int | None = None    # gs://: the generation of the object we created


def owner_record(run_id: str) -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "run": run_id}


def acquire(folder: str, run_id: str, log=lambda message: None) -> Lock:
    """Takes OUT's lock; SamplerError (one line) if another run holds it. OSError if the
    folder cannot be written."""
    path = paths.join(folder, LOCK_FILE)
    if paths.is_remote(path):
        return _acquire_object(folder, path, run_id, log)
    return _acquire_local(folder, path, run_id, log)


def release(lock: Lock) -> None:
    """Gives the lock up (never fails: a run that ends must not fail on its lock)."""
    try:
        if lock.fd is not None:
            try:
                os.unlink(lock.path)  # while still holding it: see the module docstring
            finally:
                os.close(lock.fd)
                lock.fd = None
        elif lock.generation is not None:
            gcs.delete_if_generation(lock.path, lock.generation)
            lock.generation = None
    except OSError:
        pass


# ---- local folders -------------------------------------------------------------------

def _acquire_local(folder: str, path: str, run_id: str, log) -> Lock:
    """The lock file is only ever written when this run created it (O_CREAT | O_EXCL),
    and never opened through a link (O_NOFOLLOW): an existing one is opened read-only to
    take its flock and see who held it, and a stale one is deleted while its flock is
    held and created afresh, so no file that was there before is written through."""
    for _ in range(_ATTEMPTS):
        created = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                         0o644)
        except FileExistsError:
            created = False
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
            except FileNotFoundError:
                continue  # released in between: create it
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise SamplerError(_not_a_lock(folder, path, "a symbolic link")) from None
                raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise SamplerError(_not_a_lock(folder, path, "not a regular file" if not
                                               stat.S_ISREG(info.st_mode) else
                                               "a file with other names (a hard link)"))
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_fd(fd)
            os.close(fd)
            raise SamplerError(f"--output {folder}: another `sample` run ({_who(owner)}) is "
                               f"writing there; wait for it to end or choose another folder")
        except BaseException:
            os.close(fd)
            raise
        try:
            current = os.stat(path, follow_symlinks=False).st_ino
        except FileNotFoundError:
            current = None
        if current != info.st_ino:  # released (deleted) between open and flock
            os.close(fd)
            continue
        if not created:
            previous = _read_fd(fd)
            if previous and not _is_record(previous):  # empty: a run killed as it began
                os.close(fd)
                raise SamplerError(_not_a_lock(folder, path, "not a lock record (pid, host)"))
            if previous.get("host") not in (None, socket.gethostname()):
                os.close(fd)
                raise SamplerError(_foreign_host(folder, path, previous))
            if previous:
                log(f"a previous run ({_who(previous)}) ended without cleaning up; taking over")
            # Deleted while its flock is held, then created afresh: a run that opened the
            # old file sees the name lead elsewhere and retries.
            try:
                os.unlink(path)
            finally:
                os.close(fd)
            continue
        try:
            os.pwrite(fd, json.dumps(owner_record(run_id)).encode(), 0)
        except OSError:  # e.g. a full disk: the lock is ours, so is removing it
            release(Lock(folder, path, fd=fd))
            raise
        except BaseException:
            os.close(fd)
            raise
        return Lock(folder, path, fd=fd)
    raise SamplerError(f"--output {folder}: the lock {LOCK_FILE} kept changing; another "
                       f"`sample` run is starting there")


def _not_a_lock(folder: str, path: str, what: str) -> str:
    return (f"--output {folder}: {LOCK_FILE} is {what}, not a lock `sample` wrote; it is "
            f"never opened through a link or written into; remove it ({path}) if it is yours")


def _is_record(owner: dict) -> bool:
    """Whether a lock file's content is a lock `sample` wrote (owner_record's form)."""
    return isinstance(owner.get("pid"), int) and isinstance(owner.get("host"), str)


def _read_fd(fd: int) -> dict:
    try:
        data = os.pread(fd, 4096, 0)
        owner = json_data.loads(data) if data.strip() else {}
    except (OSError, ValueError):
        return {"unreadable": True}
    return owner if isinstance(owner, dict) else {"unreadable": True}


# ---- gs:// -------------------------------------------------------------------------------

def _acquire_object(folder: str, path: str, run_id: str, log) -> Lock:
    for _ in range(_ATTEMPTS):
        found = gcs.read_with_generation(path)
        if found is None:
            generation = gcs.create_if_absent(path, json.dumps(owner_record(run_id)).encode())
            if generation is not None:
                return Lock(folder, path, generation=generation)
            continue  # another run created it first: look at who
        data, generation = found
        try:
            owner = json_data.loads(data)
        except ValueError:
            owner = {}
        if not isinstance(owner, dict):
            owner = {}
        if owner.get("run") == run_id:  # ours: a retried create whose answer was lost
            return Lock(folder, path, generation=generation)
        if owner.get("host") not in (None, socket.gethostname()):
            raise SamplerError(_foreign_host(folder, path, owner))
        if _alive(owner):
            raise SamplerError(f"--output {folder}: another `sample` run ({_who(owner)}) is "
                               f"writing there; wait for it to end or choose another folder")
        if gcs.delete_if_generation(path, generation):
            log(f"a previous run ({_who(owner)}) ended without cleaning up; taking over")
    raise SamplerError(f"--output {folder}: the lock {LOCK_FILE} kept changing; another "
                       f"`sample` run is starting there")


def _alive(owner: dict) -> bool:
    """Whether the lock's owner still runs on this host."""
    pid = owner.get("pid")
    if owner.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return True  # this very process: a run inside a run (an API user's thread)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- messages --------------------------------------------------------------------------

def _who(owner: dict) -> str:
    if not owner:
        return "one that is starting: its lock names no holder yet"
    if owner.get("unreadable"):
        return "its lock file is unreadable"
    return (f"pid {owner.get('pid')} on {owner.get('host')}, started "
            f"{owner.get('started', '?')}")


def _foreign_host(folder: str, path: str, owner: dict) -> str:
    remove = f"gcloud storage rm {path}" if paths.is_remote(path) else f"rm {path}"
    return (f"--output {folder}: a `sample` run on {owner['host']} (pid {owner.get('pid')}, "
            f"started {owner.get('started')}) holds {LOCK_FILE}; if it is not running any "
            f"more, delete the lock ({remove})")
