"""Fetch the official KLUE files, verify them, and place them atomically in the official layout.

Two sources, chosen per call:
- HTTP (`base_url`): v1.1 files from the KLUE repository's raw URLs (`<base>/<official path>`), v1
  tarballs from the URLs the task modules declare (or `<v1 base>/<tarball name>` for a mirror);
- a local directory (`from_dir`) in the same layout, for machines without a network.

Every file is identified by what its task declares: a v1.1 file by its git blob id (and size
where known), a v1 tarball by sha256 and size. A file is written to a temporary file beside its final
place, verified, then renamed; one that fails verification is deleted, never left in place. A file
already present that verifies is skipped. Only the standard library talks HTTP (the core install has
no `requests`); what a retry can help (a broken transfer, HTTP 429 with its Retry-After, 502-504) is retried
under klue's one retry policy (`klue.io.retry`), a broken transfer resumed with a Range request when the
server accepts ranges. A mirror URL may carry credentials (`https://user:token@mirror/`): they are sent as
a Basic header and blanked in every message (`klue.io.redact`).

Two clocks bound a transfer: a socket timeout per read (`RetryPolicy.timeout_s`: a silent server) and a
deadline for the whole file, all attempts included (`RetryPolicy.deadline_s`: a server that drips a byte
now and then never trips a read timeout). The temporary `.part` file of a transfer is locked while its run
lives; a run killed outright (kill -9, power loss) leaves it unlocked, and the next run placing the same
file removes it. `sigterm_exits` makes SIGTERM run the clean-up a Ctrl-C runs.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import os
import re
import shutil
import signal
import socket
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import BinaryIO, Literal, Protocol

try:  # POSIX: a live run's .part is told from an abandoned one by its lock
    import fcntl
except ImportError:  # Windows: by its age instead (_part_abandoned)
    fcntl = None  # type: ignore[assignment]  # typeshed: the module is never None

from rich.progress import Progress, TaskID

from klue.errors import UnreachableError
from klue.io.atomic import swap_in, temp_dir_in, temp_path_beside
from klue.io.hashing import git_blob_sha1, sha256_file
from klue.io.redact import redact_url, split_credentials
from klue.io.release import ArchiveFile, FileRole, OfficialFile
from klue.io.retry import Deadline, RetryPolicy, retry_after_seconds, retryable_status

DEFAULT_BASE_URL = "https://raw.githubusercontent.com/KLUE-benchmark/KLUE/main/klue_benchmark/"
BASE_URL_ENV = "KLUE_DOWNLOAD_BASE_URL"  # a mirror of `klue_benchmark/` (v1.1 files by official path)
V1_BASE_URL_ENV = "KLUE_DOWNLOAD_V1_BASE_URL"  # a mirror holding the v1 tarballs by file name
CHUNK_SIZE = 1 << 16
DEFAULT_DEADLINE_S = 1800.0  # a whole file; the largest official file (19 MB) needs ~11 KB/s to make it
PART_GRACE_S = 1.0  # a .part younger than this may be another run's, created but not locked yet
PART_STALE_WITHOUT_LOCKS_S = 3600.0  # where there is no flock: a .part untouched this long is abandoned
USER_AGENT = "klue-downloader (+https://github.com/KLUE-benchmark/KLUE)"

Version = Literal["v1.1", "v1"]
VERSIONS: tuple[Version, ...] = ("v1.1", "v1")
Status = Literal["present", "downloaded", "imported", "failed", "missing"]


class Release(Protocol):
    """What the downloader needs of a task: its name and the files it declares (a registry task is one)."""

    @property
    def name(self) -> str: ...
    @property
    def files(self) -> Sequence[OfficialFile]: ...
    @property
    def v1_archive(self) -> ArchiveFile | None: ...


class DownloadError(Exception):
    """A file could not be fetched or did not verify; the message is one sentence for the user."""


class HostUnreachableError(DownloadError, UnreachableError):
    """No connection to the host at all (refused, DNS failure, connect timeout): nothing will work (exit 3)."""


class _TransientError(Exception):
    """A transfer that broke off (connection dropped, short body, 429, 502-504): worth another attempt."""

    def __init__(self, why: str, retry_after_s: float | None = None) -> None:
        super().__init__(why)
        self.retry_after_s = retry_after_s  # the server's Retry-After, in seconds, when it gave one


# The whole transfer of one file, every attempt included, is bounded by the deadline (RetryPolicy is klue's one
# retry policy, klue.io.retry, re-exported here for the callers of the downloader).
DOWNLOAD_POLICY = RetryPolicy(deadline_s=DEFAULT_DEADLINE_S)
NO_DEADLINE = Deadline(None, None)


@dataclass(frozen=True)
class WantedFile:
    """One file to put in place: where it goes under the destination and how it is identified."""

    task: str
    path: str  # relative to the destination, POSIX form (v1.1: official path; v1: tarball name)
    url: str
    size: int | None
    git_blob: str | None = None  # v1.1 files
    sha256: str | None = None  # v1 tarballs
    archive: bool = False  # a v1 tarball, extracted into the destination once verified

    def identity(self) -> str:
        return f"git blob {self.git_blob}" if self.git_blob else f"sha256 {self.sha256}"


@dataclass(frozen=True)
class FileOutcome:
    task: str
    path: str
    status: Status
    size: int | None = None
    detail: str = ""  # why it failed, or what was done (e.g. "extracted ynat-v1/")

    @property
    def ok(self) -> bool:
        return self.status in ("present", "downloaded", "imported")


@dataclass
class DownloadReport:
    dest: Path
    version: str
    source: str  # the base URL or the --from directory
    outcomes: list[FileOutcome] = field(default_factory=list)

    @property
    def problems(self) -> list[FileOutcome]:
        return [o for o in self.outcomes if not o.ok]


# ---------------------------------------------------------------------------------------------- plan


def base_url_for(
    version: Version, override: str | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The mirror to fetch from: `override`, then the version's environment variable, then the
    official location (None for v1: each task declares its tarball's full URL)."""
    env = os.environ if environ is None else environ
    if override:
        return override
    variable = BASE_URL_ENV if version == "v1.1" else V1_BASE_URL_ENV
    if env.get(variable):
        return env[variable]
    return DEFAULT_BASE_URL if version == "v1.1" else None


def _join_url(base: str, relative: str) -> str:
    return base.rstrip("/") + "/" + urllib.parse.quote(relative)


def plan(
    tasks: Sequence[Release],
    version: Version = "v1.1",
    base_url: str | None = None,
    roles: Iterable[FileRole] | None = None,
) -> list[WantedFile]:
    """The files the given tasks declare for `version`, in task order. `base_url` as from base_url_for.

    v1: a task without a declared tarball raises DownloadError when it was asked for alone, and is
    left out (silently) when several were asked for, since not every task must have a v1 release.
    """
    if version not in VERSIONS:
        raise DownloadError(f"unknown data version {version!r}; choose one of {', '.join(VERSIONS)}")
    wanted_roles = set(roles) if roles else None
    files: list[WantedFile] = []
    for task in tasks:
        if version == "v1.1":
            base = base_url or DEFAULT_BASE_URL
            for entry in task.files:
                if wanted_roles is None or entry.role in wanted_roles:
                    files.append(
                        WantedFile(
                            task.name, entry.path, _join_url(base, entry.path), entry.size, entry.git_blob
                        )
                    )
            continue
        archive = task.v1_archive
        if archive is None:
            if len(tasks) == 1:
                raise DownloadError(f"task {task.name!r} declares no v1 archive; use --version v1.1")
            continue
        name = PurePosixPath(urllib.parse.urlparse(archive.url).path).name
        url = _join_url(base_url, name) if base_url else archive.url
        files.append(WantedFile(task.name, name, url, archive.size, sha256=archive.sha256, archive=True))
    return files


# ------------------------------------------------------------------------------------------- verify


def verification_problem(path: Path, wanted: WantedFile) -> str | None:
    """None when `path` is the declared file; otherwise what is wrong with it, as a phrase."""
    size = path.stat().st_size
    if wanted.size is not None and size != wanted.size:
        return f"it has {size} bytes, expected {wanted.size}"
    if wanted.git_blob is not None:
        actual = git_blob_sha1(path)
        if actual != wanted.git_blob:
            return f"its git blob id is {actual}, expected {wanted.git_blob}"
    if wanted.sha256 is not None:
        actual = sha256_file(path)
        if actual != wanted.sha256:
            return f"its sha256 is {actual}, expected {wanted.sha256}"
    return None


# --------------------------------------------------------------------------------------- transfers


_NO_ROUTE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN, errno.EADDRNOTAVAIL}


def _is_unreachable(error: urllib.error.URLError) -> bool:
    """Connect-phase failures that another try will not fix: refused, DNS, connect timeout, no route.
    (HTTPError is a reply; a reset while sending the request is transient.)"""
    reason = error.reason
    if isinstance(error, urllib.error.HTTPError) or not isinstance(reason, OSError):
        return False
    if isinstance(reason, (ConnectionRefusedError, socket.gaierror, TimeoutError)):
        return True
    return reason.errno in _NO_ROUTE


def _host(url: str) -> str:
    """`host:port` of a URL, without any credentials."""
    parsed = urllib.parse.urlparse(url)
    return parsed.netloc.rpartition("@")[2] or redact_url(url)


def _unreachable_message(url: str, reason: object) -> str:
    return (
        f"the download could not reach {_host(url)} ({reason}); without a network, import a local copy in "
        f"the same layout with `--from DIR`, or point --data-dir / KLUE_DATA_DIR at a directory that "
        f"already holds the files"
    )


def _deadline_error(deadline: Deadline, url: str, received: int, total: int | None) -> DownloadError:
    got = f"{received} of {total} bytes" if total is not None else f"{received} bytes"
    return DownloadError(f"the transfer of {redact_url(url)} did not finish within its deadline of "
                         f"{deadline.seconds:g} s (--deadline); {got} had arrived")


def _expected_total(response: http.client.HTTPResponse) -> int | None:
    """The full file size the server promises, from Content-Range (206) or Content-Length (200)."""
    if response.status == 206:
        content_range = response.headers.get("Content-Range", "")  # "bytes 100-199/200"
        total = content_range.rpartition("/")[2]
        return int(total) if total.isdigit() else None
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _resume_offset(response: http.client.HTTPResponse, offset: int) -> int:
    """Where this response's body starts: `offset` for a matching 206, else 0 (a full body)."""
    if offset and response.status == 206:
        start = response.headers.get("Content-Range", "").removeprefix("bytes ").partition("-")[0]
        if start.isdigit() and int(start) == offset:
            return offset
        raise _TransientError(f"server answered a range request with Content-Range {start!r}")
    return 0


def _one_attempt(
    url: str,
    handle: BinaryIO,
    offset: int,
    policy: RetryPolicy,
    progress: Progress | None,
    progress_id: TaskID | None,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[int, bool]:
    """Fetch `url` into `handle` (resuming at `offset` when > 0); returns (bytes in handle,
    server accepts ranges). Raises _TransientError when the body breaks off, DownloadError when the
    deadline passes (checked as bytes arrive; a read that gets none waits at most `policy.timeout_s`)."""
    plain_url, authorization = split_credentials(url)
    headers = {"User-Agent": USER_AGENT}
    if authorization:
        headers["Authorization"] = authorization
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(plain_url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=policy.timeout_s)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # our partial copy is not a prefix the server knows: restart
            raise _TransientError("server refused the resume range") from error
        if retryable_status(error.code):
            raise _TransientError(f"HTTP {error.code} {error.reason}",
                                  retry_after_seconds(error.headers.get("Retry-After"))) from error
        raise DownloadError(f"the server answered HTTP {error.code} {error.reason} for {redact_url(url)}") from error
    except urllib.error.URLError as error:
        if _is_unreachable(error):
            raise HostUnreachableError(_unreachable_message(url, error.reason)) from error
        if isinstance(error.reason, OSError):
            raise _TransientError(str(error.reason)) from error
        raise DownloadError(f"cannot fetch {redact_url(url)}: {error.reason}") from error
    except (http.client.HTTPException, ConnectionError, TimeoutError) as error:
        raise _TransientError(f"{type(error).__name__}: {error}") from error

    with response:
        start = _resume_offset(response, offset)
        handle.seek(start)
        handle.truncate()
        received = start
        total = _expected_total(response)
        accepts_ranges = response.headers.get("Accept-Ranges", "").lower() == "bytes"
        if progress is not None and progress_id is not None:
            progress.update(progress_id, completed=received, total=total)
        try:
            # read1 returns what has arrived (read waits for a whole chunk), so a drip meets the deadline.
            while chunk := response.read1(CHUNK_SIZE):
                handle.write(chunk)
                received += len(chunk)
                if progress is not None and progress_id is not None:
                    progress.update(progress_id, completed=received)
                if deadline.passed():
                    handle.flush()
                    raise _deadline_error(deadline, url, received, total)
        except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as error:
            handle.flush()
            why = f"{type(error).__name__}: {error}"
            raise _BrokenTransfer(received, accepts_ranges, why, total) from error
        handle.flush()
    # http.client returns b"" on a short body instead of raising: compare with the promised size.
    if total is not None and received != total:
        raise _BrokenTransfer(
            received, accepts_ranges, f"connection closed after {received} of {total} bytes", total
        )
    return received, accepts_ranges


class _BrokenTransfer(_TransientError):
    def __init__(self, received: int, accepts_ranges: bool, why: str, total: int | None = None) -> None:
        super().__init__(why)
        self.received = received
        self.accepts_ranges = accepts_ranges
        self.total = total


def fetch_url(
    url: str,
    handle: BinaryIO,
    policy: RetryPolicy = DOWNLOAD_POLICY,
    progress: Progress | None = None,
    progress_id: TaskID | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Download `url` into the open binary `handle`, retrying broken transfers with backoff (and
    resuming with Range when the server accepts ranges). Returns the number of bytes written.

    Raises HostUnreachableError when no connection can be made, DownloadError for an HTTP error reply,
    when every attempt broke off, when a server asks for a longer pause than the policy waits, or when
    `policy.deadline_s` passed first."""
    deadline = Deadline.starting_now(policy.deadline_s)
    offset = received = 0
    total: int | None = None
    last_reason = ""
    retry_after: float | None = None
    for attempt in range(1, policy.attempts + 1):
        if policy.too_long(retry_after):
            raise DownloadError(f"{redact_url(url)}: the server is busy and asks to wait {retry_after:.0f} s, "
                                f"longer than klue waits ({policy.max_retry_after_s:g} s); run the same command "
                                "again later")
        wait = policy.wait_before(attempt, retry_after)
        if deadline.passed(after_s=wait):  # no try that would start after the deadline
            raise _deadline_error(deadline, url, received, total)
        sleep(wait)
        try:
            received, _ = _one_attempt(url, handle, offset, policy, progress, progress_id, deadline)
            return received
        except _BrokenTransfer as broken:
            offset = broken.received if broken.accepts_ranges else 0
            received, total = broken.received, broken.total
            last_reason = str(broken)
        except _TransientError as error:
            offset = 0
            last_reason = str(error)
            retry_after = error.retry_after_s
    raise DownloadError(f"the transfer of {redact_url(url)} broke off {policy.attempts} times (last: {last_reason})")


# ----------------------------------------------------------------------------------------- placing


def _make_dirs(path: Path) -> list[Path]:
    """mkdir -p, returning the directories it created (deepest last) so a failure can remove them."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
    return list(reversed(missing))


def _remove_empty(directories: list[Path]) -> None:
    for directory in reversed(directories):
        try:
            directory.rmdir()
        except OSError:  # not empty (someone else wrote there): keep it
            return


def _part_pattern(final: Path) -> re.Pattern[str]:
    """The names `temp_path_beside(final, ".part")` gives: `.<name>.<12 hex digits>.part`."""
    return re.compile(re.escape(f".{final.name}.") + r"[0-9a-f]{12}\.part")


def _lock_part(fd: int) -> int | None:
    """Lock the new .part open at `fd` for as long as this run lives; returns a descriptor that holds the
    lock (close it to release), or None where there are no locks. The lock goes with the process, so a
    run killed outright leaves its .part unlocked for the next run to remove."""
    if fcntl is None:
        return None
    holder = os.dup(fd)  # the lock belongs to the open file, which stays open while `holder` does
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # no locks on this file system: the download works all the same, unguarded
        os.close(holder)
        return None
    return holder


def _part_abandoned(part: Path) -> bool:
    """True when no live run owns `part`: unlocked (no flock: untouched for an hour) and not brand new."""
    try:
        age = time.time() - part.stat().st_mtime
        if age < PART_GRACE_S:
            return False
        if fcntl is None:
            return age > PART_STALE_WITHOUT_LOCKS_S
        probe = os.open(part, os.O_RDONLY)
    except OSError:  # gone already, or not ours to open: leave it
        return False
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:  # locked: a live run is writing it
        return False
    finally:
        os.close(probe)


def remove_stale_parts(final: Path) -> list[Path]:
    """Remove the `.part` files that runs killed while placing `final` left beside it; returns them."""
    pattern = _part_pattern(final)
    try:
        candidates = [p for p in final.parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:  # no directory yet (nothing to remove), or one we cannot list (the write will say)
        return []
    removed: list[Path] = []
    for part in candidates:
        if _part_abandoned(part):
            with contextlib.suppress(OSError):
                part.unlink()
                removed.append(part)
    return removed


@contextlib.contextmanager
def sigterm_exits(code: int = 128 + signal.SIGTERM) -> Iterator[None]:
    """Inside, SIGTERM raises SystemExit(`code`) instead of ending the process on the spot, so the
    `finally` clauses that remove a .part run as they do for Ctrl-C. A second SIGTERM acts as before
    (the handler puts the previous one back first). Outside the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def exit_now(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, previous)
        raise SystemExit(code)

    signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _copy_into(source: Path, handle: BinaryIO, progress: Progress | None, progress_id: TaskID | None) -> int:
    copied = 0
    with source.open("rb") as reader:
        while chunk := reader.read(CHUNK_SIZE):
            handle.write(chunk)
            copied += len(chunk)
            if progress is not None and progress_id is not None:
                progress.update(progress_id, completed=copied)
    handle.flush()
    return copied


def place_file(
    wanted: WantedFile,
    dest: Path,
    from_dir: Path | None = None,
    policy: RetryPolicy = DOWNLOAD_POLICY,
    progress: Progress | None = None,
) -> FileOutcome:
    """Put one file at `dest / wanted.path`: skip it when present and verified, else fetch it (HTTP,
    or copy from `from_dir`) into a temporary file beside it, verify, and rename it into place.

    Raises HostUnreachableError (stop everything); every other failure becomes a FileOutcome."""
    final = dest / wanted.path
    remove_stale_parts(final)
    if final.is_file():
        present_problem = verification_problem(final, wanted)
        if present_problem is None:
            return FileOutcome(wanted.task, wanted.path, "present", final.stat().st_size)
    else:
        present_problem = None
    source_file = from_dir / wanted.path if from_dir is not None else None
    if source_file is not None and not source_file.is_file():
        return FileOutcome(wanted.task, wanted.path, "missing", None, f"not in {from_dir}")

    created = _make_dirs(final.parent)
    fd, tmp = temp_path_beside(final, ".part")  # the umask's mode, not mkstemp's 0600
    lock = _lock_part(fd)
    placed = False
    progress_id = None
    if progress is not None:
        progress_id = progress.add_task(wanted.path, total=wanted.size)
    try:
        with os.fdopen(fd, "w+b") as handle:
            if source_file is not None:
                _copy_into(source_file, handle, progress, progress_id)
            else:
                fetch_url(wanted.url, handle, policy, progress, progress_id)
        problem = verification_problem(tmp, wanted)
        if problem is not None:
            where = source_file if source_file is not None else redact_url(wanted.url)
            return FileOutcome(
                wanted.task,
                wanted.path,
                "failed",
                None,
                f"the copy from {where} does not verify ({problem}) and was deleted"
                + _still_bad(present_problem),
            )
        os.replace(tmp, final)
        placed = True
        status: Status = "imported" if source_file is not None else "downloaded"
        note = f"replaced a copy that did not verify ({present_problem})" if present_problem else ""
        return FileOutcome(wanted.task, wanted.path, status, final.stat().st_size, note)
    except HostUnreachableError:
        raise
    except DownloadError as error:
        return FileOutcome(wanted.task, wanted.path, "failed", None, str(error) + _still_bad(present_problem))
    finally:
        if progress is not None and progress_id is not None:
            progress.remove_task(progress_id)
        if not placed:
            tmp.unlink(missing_ok=True)
        if lock is not None:
            os.close(lock)
        if not placed:
            _remove_empty(created)


def _still_bad(present_problem: str | None) -> str:
    if present_problem is None:
        return ""
    return f"; the copy already in place does not verify either ({present_problem})"


# -------------------------------------------------------------------------------------- archives


def _safe_member_name(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    """The member's path relative to the destination, or DownloadError when it could escape it or is
    anything but a plain file or directory (links and devices are refused outright)."""
    name = PurePosixPath(member.name)
    parts = [p for p in name.parts if p not in ("", ".")]
    if name.is_absolute() or ".." in parts or (parts and ":" in parts[0]):
        raise DownloadError(f"archive {archive.name} has a member path {member.name!r} outside its directory")
    if not (member.isfile() or member.isdir()):
        raise DownloadError(f"archive {archive.name} has a member {member.name!r} that is a link or device")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def archive_members(archive: Path) -> list[tuple[PurePosixPath, tarfile.TarInfo]]:
    """Every member of a tarball, checked (see _safe_member_name)."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            return [(_safe_member_name(m, archive), m) for m in tar.getmembers()]
    except tarfile.TarError as error:
        raise DownloadError(f"archive {archive.name} cannot be read: {error}") from error


def _already_extracted(members: list[tuple[PurePosixPath, tarfile.TarInfo]], dest: Path) -> bool:
    for name, member in members:
        target = dest / name
        if member.isfile() and not (target.is_file() and target.stat().st_size == member.size):
            return False
        if member.isdir() and not target.is_dir():
            return False
    return True


def extract_archive(archive: Path, dest: Path) -> list[str]:
    """Unpack a verified tarball into `dest`, refusing any member that could land outside it.

    Extracts into a temporary directory inside `dest` first, then renames each top-level entry into
    place (replacing an older copy), so a failure leaves neither a half tree nor stray files. Returns
    the top-level names it placed; an archive already unpacked (every file there with its size) is
    left alone and returns []."""
    members = archive_members(archive)
    if _already_extracted(members, dest):
        return []
    staging = temp_dir_in(dest, ".klue-extract-")
    try:
        with tarfile.open(archive, "r:*") as tar:
            # Our own check above gives the clear error; the "data" filter is a second line of defence.
            tar.extractall(staging, filter="data")
        tops = sorted({name.parts[0] for name, _ in members if name.parts and name.parts[0] != "."})
        for top in tops:
            swap_in(staging / top, dest / top)
        return tops
    except (tarfile.TarError, OSError) as error:
        raise DownloadError(f"archive {archive.name} could not be extracted into {dest}: {error}") from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _place_archive(
    wanted: WantedFile, dest: Path, from_dir: Path | None, policy: RetryPolicy, progress: Progress | None
) -> FileOutcome:
    outcome = place_file(wanted, dest, from_dir, policy, progress)
    if not outcome.ok:
        return outcome
    try:
        tops = extract_archive(dest / wanted.path, dest)
    except DownloadError as error:
        if outcome.status != "present":  # placed by this run: take it back, so nothing half-done stays
            (dest / wanted.path).unlink(missing_ok=True)
        return FileOutcome(wanted.task, wanted.path, "failed", None, str(error))
    extracted = f"extracted {', '.join(t + '/' for t in tops)}" if tops else "already extracted"
    detail = "; ".join(d for d in (outcome.detail, extracted) if d)
    return FileOutcome(outcome.task, outcome.path, outcome.status, outcome.size, detail)


# ------------------------------------------------------------------------------------------- entry


def download(
    tasks: Sequence[Release],
    dest: Path,
    version: Version = "v1.1",
    base_url: str | None = None,
    from_dir: Path | None = None,
    roles: Iterable[FileRole] | None = None,
    policy: RetryPolicy = DOWNLOAD_POLICY,
    progress: Progress | None = None,
    environ: Mapping[str, str] | None = None,
) -> DownloadReport:
    """Place every file the tasks declare for `version` under `dest`, fetched from `base_url` (see
    base_url_for) or imported from `from_dir`. Stops with HostUnreachableError at the first file whose
    host cannot be reached; every other failure is reported per file in the returned report."""
    if from_dir is not None and not from_dir.is_dir():
        raise DownloadError(f"--from {from_dir} is not a directory")
    base = base_url_for(version, base_url, environ)
    wanted = plan(tasks, version, base, roles)
    source = str(from_dir) if from_dir is not None else (redact_url(base) if base else
                                                          "the URLs the task modules declare")
    report = DownloadReport(dest=dest, version=version, source=source)
    if not wanted:
        return report
    _make_dirs(dest)
    for item in wanted:
        place = _place_archive if item.archive else place_file
        report.outcomes.append(place(item, dest, from_dir, policy, progress))
    return report
