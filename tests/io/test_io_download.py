"""`klue data download`: verified, atomic placement from a local HTTP server or a local copy."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from download_http_fixture import FileServer, Route, closed_port
from rich.console import Console
from rich.progress import Progress
from typer.testing import CliRunner

from klue import registry
from klue.cli import app
from klue.io import download as dl
from klue.io.hashing import git_blob_sha1, git_blob_sha1_bytes
from klue.tasks.base import ArchiveFile, OfficialFile, Task

runner = CliRunner()
FAST = dl.RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.02, timeout_s=5.0)
STS_DEV = "klue-sts-v1.1/klue-sts-v1.1_dev.json"
RELATIONS = "klue-re-v1.1/relation_list.json"


def synthetic_task(files: tuple[OfficialFile, ...] = (), archive: ArchiveFile | None = None) -> Task:
    """A Task that declares the given files (built from a registered one; not registered itself)."""
    return dataclasses.replace(registry.get("nli"), name="demo", aliases=(), files=files, v1_archive=archive)


def declared(path: str, data: bytes, role: str = "dev") -> OfficialFile:
    return OfficialFile(role, path, git_blob_sha1_bytes(data), len(data))  # type: ignore[arg-type]


def everything_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def make_tarball(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buffer.getvalue()


def archive_for(url: str, data: bytes) -> ArchiveFile:
    return ArchiveFile(url, hashlib.sha256(data).hexdigest(), len(data))


# ------------------------------------------------------------------------------------------- plan


def test_plan_takes_every_file_from_the_registry() -> None:
    tasks = registry.all_tasks()
    planned = dl.plan(tasks, "v1.1", "http://mirror/base/")
    assert [(w.task, w.path, w.git_blob) for w in planned] == [
        (t.name, f.path, f.git_blob) for t in tasks for f in t.files
    ]
    assert all(w.url == f"http://mirror/base/{w.path}" for w in planned)
    assert {w.path for w in dl.plan(tasks, "v1.1", None, roles=["resource"])} == {
        f.path for t in tasks for f in t.files if f.role == "resource"
    }
    v1 = dl.plan(tasks, "v1", None)
    assert [w.url for w in v1] == [t.v1_archive.url for t in tasks if t.v1_archive]
    mirrored = dl.plan(tasks, "v1", "http://mirror/v1")
    assert all(w.url == f"http://mirror/v1/{w.path}" and w.path.endswith(".tar.gz") for w in mirrored)


def test_plan_rejects_a_task_without_v1_archive_and_unknown_versions() -> None:
    with pytest.raises(dl.DownloadError, match="declares no v1 archive"):
        dl.plan([synthetic_task()], "v1")
    with pytest.raises(dl.DownloadError, match="unknown data version"):
        dl.plan([synthetic_task()], "v2")  # type: ignore[arg-type]


def test_base_url_chain() -> None:
    assert dl.base_url_for("v1.1", None, {}) == dl.DEFAULT_BASE_URL
    assert dl.base_url_for("v1.1", None, {dl.BASE_URL_ENV: "http://env"}) == "http://env"
    assert dl.base_url_for("v1.1", "http://cli", {dl.BASE_URL_ENV: "http://env"}) == "http://cli"
    assert dl.base_url_for("v1", None, {dl.BASE_URL_ENV: "http://env"}) is None
    assert dl.base_url_for("v1", None, {dl.V1_BASE_URL_ENV: "http://v1"}) == "http://v1"


def test_backoff_doubles_and_is_capped() -> None:
    policy = dl.RetryPolicy(attempts=6, backoff_s=1.0, max_backoff_s=4.0)
    assert [policy.wait_before(a) for a in range(1, 7)] == [0.0, 1.0, 2.0, 4.0, 4.0, 4.0]


# ------------------------------------------------------------------------------------ HTTP, v1.1


def test_real_files_download_verify_and_are_skipped_next_time(klue_data_dir: Path, tmp_path: Path) -> None:
    routes = {p: Route((klue_data_dir / p).read_bytes()) for p in (STS_DEV, RELATIONS)}
    dest = tmp_path / "dest"
    tasks = [registry.get("sts"), registry.get("re")]
    with FileServer(routes) as server:
        progress = Progress(console=Console(file=io.StringIO(), force_terminal=True))
        with progress:
            report = dl.download(tasks, dest, base_url=server.url, roles=["dev"], policy=FAST, progress=progress)
        statuses = {o.path: o.status for o in report.outcomes}
        # re's dev file is not served here: a 404 is a per-file failure, the others still land.
        assert statuses[STS_DEV] == "downloaded"
        assert statuses["klue-re-v1.1/klue-re-v1.1_dev.json"] == "failed"
        again = dl.download(tasks, dest, base_url=server.url, roles=["resource"], policy=FAST)
        assert [(o.path, o.status) for o in again.outcomes] == [(RELATIONS, "downloaded")]
        n_hits = len(server.hits)
        third = dl.download(tasks, dest, base_url=server.url, roles=["resource"], policy=FAST)
        assert [o.status for o in third.outcomes] == ["present"]
        assert len(server.hits) == n_hits  # verified in place: no request at all
    assert git_blob_sha1(dest / STS_DEV) == registry.get("sts").file("dev").git_blob
    assert git_blob_sha1(dest / RELATIONS) == registry.get("re").file("resource").git_blob
    assert everything_under(dest) == sorted(["klue-sts-v1.1", STS_DEV, "klue-re-v1.1", RELATIONS])
    failed = next(o for o in report.outcomes if o.status == "failed")
    assert "HTTP 404" in failed.detail


def test_cli_downloads_real_file_from_mirror(klue_data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    routes = {STS_DEV: Route((klue_data_dir / STS_DEV).read_bytes())}
    with FileServer(routes) as server:
        monkeypatch.setenv(dl.BASE_URL_ENV, server.url)
        result = runner.invoke(app, ["data", "download", "klue-sts", "--role", "dev", "--dest", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "downloaded" in result.stdout
    assert (tmp_path / STS_DEV).read_bytes() == routes[STS_DEV].body


def test_cli_default_destination_is_the_data_dir(tmp_path: Path, monkeypatch) -> None:
    data = b'[{"guid": "x"}]\n'
    path = "klue-sts-v1.1/klue-sts-v1.1_dev.json"
    source = tmp_path / "copy"
    (source / path).parent.mkdir(parents=True)
    (source / path).write_bytes(data)
    # The real STS dev blob id will not match these bytes: the import fails, but it shows where it aimed.
    monkeypatch.setenv("KLUE_DATA_DIR", str(tmp_path / "env-root"))
    result = runner.invoke(app, ["data", "download", "sts", "--role", "dev", "--from", str(source)])
    assert result.exit_code == 2
    assert f"not in place in {tmp_path / 'env-root'}" in result.stderr
    assert everything_under(tmp_path / "env-root") == []


def test_corrupted_file_is_rejected_and_nothing_remains(tmp_path: Path) -> None:
    good = b"official bytes\n" * 100
    bad = good.replace(b"official", b"tampered")
    task = synthetic_task((declared("demo-v1.1/demo-v1.1_dev.json", good),))
    dest = tmp_path / "dest"
    with FileServer({"demo-v1.1/demo-v1.1_dev.json": Route(bad)}) as server:
        report = dl.download([task], dest, base_url=server.url, policy=FAST)
    (outcome,) = report.outcomes
    assert outcome.status == "failed"
    assert "does not verify" in outcome.detail and "deleted" in outcome.detail
    assert everything_under(dest) == []  # no file, no temp file, no empty task directory


def test_wrong_size_is_rejected_without_hashing_in_place(tmp_path: Path) -> None:
    good = b"0123456789" * 50
    task = synthetic_task((declared("demo/f.txt", good),))
    with FileServer({"demo/f.txt": Route(good + b"extra")}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
    assert outcome.status == "failed" and "505 bytes, expected 500" in outcome.detail
    assert everything_under(tmp_path) == []


@pytest.mark.parametrize("accept_ranges", [True, False])
def test_transfer_broken_once_is_retried_and_succeeds(tmp_path: Path, accept_ranges: bool) -> None:
    data = bytes(range(256)) * 400  # 100 KiB: several chunks
    task = synthetic_task((declared("demo/big.bin", data),))
    route = Route(data, breaks=1, accept_ranges=accept_ranges)
    with FileServer({"demo/big.bin": route}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
        hits = list(server.hits)
    assert outcome.status == "downloaded", outcome.detail
    assert (tmp_path / "demo/big.bin").read_bytes() == data
    assert len(hits) == 2
    # Resumed where it broke off when the server accepts ranges, from the start otherwise.
    assert hits[1].range == (f"bytes={len(data) // 2}-" if accept_ranges else None)
    assert everything_under(tmp_path) == ["demo", "demo/big.bin"]


def test_transfer_that_always_breaks_fails_clearly_and_leaves_nothing(tmp_path: Path) -> None:
    data = b"x" * 50_000
    task = synthetic_task((declared("demo/big.bin", data),))
    with FileServer({"demo/big.bin": Route(data, breaks=100, accept_ranges=False)}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
        assert len(server.hits) == FAST.attempts
    assert outcome.status == "failed"
    assert "broke off 3 times" in outcome.detail and "25000 of 50000 bytes" in outcome.detail
    assert everything_under(tmp_path) == []


def test_server_error_is_retried(tmp_path: Path) -> None:
    data = b"fine"
    task = synthetic_task((declared("demo/f.txt", data),))
    with FileServer({"demo/f.txt": Route(data, status=503)}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
        assert len(server.hits) == FAST.attempts
    assert outcome.status == "failed" and "HTTP 503" in outcome.detail


def test_http_500_is_not_retried(tmp_path: Path) -> None:
    data = b"fine"
    task = synthetic_task((declared("demo/f.txt", data),))
    with FileServer({"demo/f.txt": Route(data, status=500)}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
        assert len(server.hits) == 1  # the same request gets the same answer (klue.io.retry)
    assert outcome.status == "failed" and "HTTP 500" in outcome.detail


def test_429_waits_what_retry_after_says(tmp_path: Path) -> None:
    data = b"fine"
    waits: list[float] = []
    with FileServer({"f.txt": Route(data, status=429, status_times=1, headers={"Retry-After": "7"})}) as server:
        handle = io.BytesIO()
        assert dl.fetch_url(f"{server.url}/f.txt", handle, FAST, sleep=waits.append) == len(data)  # type: ignore[arg-type]
    assert handle.getvalue() == data and waits == [0.0, 7.0]


def test_a_retry_after_longer_than_we_wait_fails_at_once(tmp_path: Path) -> None:
    waits: list[float] = []
    with FileServer({"f.txt": Route(b"x", status=503, headers={"Retry-After": "86400"})}) as server:
        with pytest.raises(dl.DownloadError, match=r"asks to wait 86400 s, longer than klue waits"):
            dl.fetch_url(f"{server.url}/f.txt", io.BytesIO(), FAST, sleep=waits.append)  # type: ignore[arg-type]
        assert len(server.hits) == 1 and sum(waits) == 0


def test_mirror_credentials_are_sent_and_never_shown(tmp_path: Path) -> None:
    task = synthetic_task((declared("demo/f.txt", b"the content"), declared("demo/g.txt", b"other")))
    with FileServer({"demo/f.txt": Route(b"the content")}) as server:
        base = server.url.replace("http://", "http://reader:s3cret-Token@")
        report = dl.download([task], tmp_path, base_url=base, policy=FAST)
        assert {hit.authorization for hit in server.hits} == {"Basic cmVhZGVyOnMzY3JldC1Ub2tlbg=="}
    assert [o.status for o in report.outcomes] == ["downloaded", "failed"]
    shown = f"{report.source} {report.outcomes[1].detail}"
    assert "HTTP 404" in shown and "s3cret" not in shown and "reader" not in shown and "***@127.0.0.1" in shown


def test_a_bad_copy_in_place_is_replaced_by_a_verified_one(tmp_path: Path) -> None:
    data = b"the real content"
    task = synthetic_task((declared("demo/f.txt", data),))
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo/f.txt").write_bytes(b"the fake content")
    with FileServer({"demo/f.txt": Route(data)}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
    assert outcome.status == "downloaded" and "did not verify" in outcome.detail
    assert (tmp_path / "demo/f.txt").read_bytes() == data


# --------------------------------------------------------------------------------------- no network


def test_no_network_exits_3_with_one_sentence(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(dl.BASE_URL_ENV, f"http://127.0.0.1:{closed_port()}")
    result = runner.invoke(app, ["data", "download", "nli", "--dest", str(tmp_path / "d")])
    assert result.exit_code == 3  # the host, not the input: README, "Exit codes"
    message = result.stderr.strip()
    assert message.startswith("klue: error: the download could not reach 127.0.0.1:")
    assert "--from DIR" in message and "KLUE_DATA_DIR" in message and "--data-dir" in message
    assert "\n" not in message and message.count(". ") == 0  # one sentence
    assert everything_under(tmp_path / "d") == []


def test_no_network_raises_host_unreachable_at_function_level(tmp_path: Path) -> None:
    task = synthetic_task((declared("demo/f.txt", b"x"),))
    with pytest.raises(dl.HostUnreachableError, match="could not reach"):
        dl.download([task], tmp_path, base_url=f"http://127.0.0.1:{closed_port()}", policy=FAST)
    assert everything_under(tmp_path) == []


# ----------------------------------------------------------------------------------------- --from


def test_from_dir_imports_and_verifies(klue_data_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["data", "download", "nli", "re", "--role", "dev", "--from", str(klue_data_dir), "--dest", str(tmp_path)]
    )
    # NLI dev is in the shared copy; RE dev is not: reported missing, exit 2, the NLI file still lands.
    assert result.exit_code == 2
    assert "imported" in result.stdout and "missing" in result.stdout
    assert "1 of 2 files are not in place in" in result.stderr
    nli_dev = registry.get("nli").file("dev")
    assert git_blob_sha1(tmp_path / nli_dev.path) == nli_dev.git_blob
    assert everything_under(tmp_path) == sorted(["klue-nli-v1.1", nli_dev.path])


def test_from_dir_with_a_bad_copy_is_rejected(tmp_path: Path) -> None:
    task = synthetic_task((declared("demo/f.txt", b"good"),))
    source = tmp_path / "source"
    (source / "demo").mkdir(parents=True)
    (source / "demo/f.txt").write_bytes(b"evil")
    dest = tmp_path / "dest"
    (outcome,) = dl.download([task], dest, from_dir=source).outcomes
    assert outcome.status == "failed" and str(source / "demo/f.txt") in outcome.detail
    assert everything_under(dest) == []


# ---------------------------------------------------------------------------------------- v1 tarballs


def test_v1_tarball_is_fetched_verified_and_extracted(tmp_path: Path) -> None:
    content = {"demo-v1/demo-v1_train.json": b"[1, 2]", "demo-v1/demo-v1_dev.json": b"[3]"}
    tarball = make_tarball(content)
    route_path = "app/Competitions/000099/data/demo-v1.tar.gz"
    with FileServer({route_path: Route(tarball)}) as server:
        task = synthetic_task(archive=archive_for(f"{server.url}/{route_path}", tarball))
        first = dl.download([task], tmp_path, version="v1", policy=FAST).outcomes
        second = dl.download([task], tmp_path, version="v1", policy=FAST).outcomes
    assert [(o.path, o.status, o.detail) for o in first] == [("demo-v1.tar.gz", "downloaded", "extracted demo-v1/")]
    assert [(o.status, o.detail) for o in second] == [("present", "already extracted")]
    for name, data in content.items():
        assert (tmp_path / name).read_bytes() == data
    assert everything_under(tmp_path) == sorted(["demo-v1.tar.gz", "demo-v1", *content])


def test_v1_tarball_with_wrong_sha256_is_rejected(tmp_path: Path) -> None:
    tarball = make_tarball({"demo-v1/a.json": b"[]"})
    with FileServer({"demo-v1.tar.gz": Route(tarball)}) as server:
        wrong = dataclasses.replace(archive_for(f"{server.url}/demo-v1.tar.gz", tarball), sha256="0" * 64)
        (outcome,) = dl.download([synthetic_task(archive=wrong)], tmp_path, version="v1", policy=FAST).outcomes
    assert outcome.status == "failed" and "sha256" in outcome.detail
    assert everything_under(tmp_path) == []


@pytest.mark.parametrize(
    ("members", "links", "why"),
    [
        ({"demo-v1/ok.json": b"[]", "../escaped.txt": b"evil"}, None, "outside its directory"),
        ({"/tmp/klue-absolute-evil.txt": b"evil"}, None, "outside its directory"),
        ({"demo-v1/ok.json": b"[]"}, {"demo-v1/link": "/etc/passwd"}, "link or device"),
    ],
)
def test_malicious_tar_member_is_refused(tmp_path: Path, members, links, why: str) -> None:
    tarball = make_tarball(members, links)
    source = tmp_path / "mirror"
    source.mkdir()
    (source / "demo-v1.tar.gz").write_bytes(tarball)
    dest = tmp_path / "deep" / "dest"
    task = synthetic_task(archive=archive_for("https://example.invalid/x/demo-v1.tar.gz", tarball))
    (outcome,) = dl.download([task], dest, version="v1", from_dir=source).outcomes
    assert outcome.status == "failed" and why in outcome.detail
    assert everything_under(dest) == []  # neither the tarball nor any member
    assert not (tmp_path / "deep" / "escaped.txt").exists()


def test_cli_v1_import_from_dir(tmp_path: Path) -> None:
    tarball = make_tarball({"klue-nli-v1/klue-nli-v1_dev.json": b"[]"})
    nli = registry.get("nli")
    assert nli.v1_archive is not None
    name = nli.v1_archive.url.rsplit("/", 1)[1]
    source = tmp_path / "mirror"
    source.mkdir()
    (source / name).write_bytes(tarball)
    # These bytes are not the official tarball: the CLI must reject them by sha256 and exit 2.
    result = runner.invoke(app, ["data", "download", "nli", "--version", "v1", "--from", str(source),
                                 "--dest", str(tmp_path / "dest")])
    assert result.exit_code == 2
    assert "does not verify" in result.stderr and f"expected {nli.v1_archive.size}" in result.stderr
    assert everything_under(tmp_path / "dest") == []


# ------------------------------------------------------------------------ interrupted runs, deadline


def stale_part(final: Path, age_s: float = 60.0) -> Path:
    """A .part beside `final` as a killed run leaves it: the downloader's name, unlocked, old."""
    final.parent.mkdir(parents=True, exist_ok=True)
    part = final.parent / f".{final.name}.0123456789ab.part"
    part.write_bytes(b"half a file")
    then = time.time() - age_s
    os.utime(part, (then, then))
    return part


def parts_under(root: Path) -> list[Path]:
    return sorted(root.rglob(".*.part"))


def test_a_part_left_by_a_killed_run_is_removed_by_the_next(tmp_path: Path) -> None:
    data = b"the real content"
    task = synthetic_task((declared("demo/f.txt", data),))
    part = stale_part(tmp_path / "demo/f.txt")
    other = tmp_path / "demo/.g.txt.0123456789ab.part"  # another file's part: not this run's business
    other.write_bytes(b"")
    os.utime(other, (0, 0))
    with FileServer({"demo/f.txt": Route(data)}) as server:
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=FAST).outcomes
    assert outcome.status == "downloaded"
    assert not part.exists() and other.exists()
    # A verified file already in place: the stale part beside it goes too, with no request.
    again = stale_part(tmp_path / "demo/f.txt")
    (outcome,) = dl.download([task], tmp_path, base_url="http://127.0.0.1:9", policy=FAST).outcomes
    assert outcome.status == "present" and not again.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_part_a_live_run_holds_is_left_alone(tmp_path: Path) -> None:
    import fcntl

    part = stale_part(tmp_path / "demo/f.txt")
    with part.open("rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert dl.remove_stale_parts(tmp_path / "demo/f.txt") == []
    assert part.exists()
    assert dl.remove_stale_parts(tmp_path / "demo/f.txt") == [part]


def start_cli_download(server: FileServer, dest: Path) -> subprocess.Popen[str]:
    """`klue data download sts --role dev` in a process of its own, against `server`."""
    env = dict(os.environ) | {dl.BASE_URL_ENV: server.url}
    command = [sys.executable, "-c", "from klue.cli import main; main()", "data", "download", "sts", "--role",
               "dev", "--dest", str(dest)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_part(process: subprocess.Popen[str], dest: Path, timeout_s: float = 30.0) -> Path:
    """The .part the download in `process` is writing, once it holds bytes."""
    stop = time.monotonic() + timeout_s
    while time.monotonic() < stop and process.poll() is None:
        found = [p for p in parts_under(dest) if p.stat().st_size > 0]
        if found:
            return found[0]
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"no .part appeared: {process.communicate()}")


def test_kill_9_leaves_a_part_the_next_run_removes(tmp_path: Path, monkeypatch) -> None:
    data = b"x" * 100_000
    route = Route(data, drip_s=0.05, drip_bytes=1000)  # 5 s: the process is killed long before the end
    dest = tmp_path / "dest"
    with FileServer({STS_DEV: route}) as server:
        process = start_cli_download(server, dest)
        part = wait_for_part(process, dest)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        assert part.exists()  # nothing runs on kill -9: the next run has to clean up
        route.drip_s = 0.0
        monkeypatch.setattr(dl, "PART_GRACE_S", 0.0)  # the part was written a moment ago
        task = synthetic_task((declared(STS_DEV, data),))
        (outcome,) = dl.download([task], dest, base_url=server.url, policy=FAST).outcomes
    assert outcome.status == "downloaded", outcome.detail
    assert parts_under(dest) == [] and (dest / STS_DEV).read_bytes() == data


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
def test_sigterm_removes_the_part_being_written(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    with FileServer({STS_DEV: Route(b"x" * 100_000, drip_s=0.05, drip_bytes=1000)}) as server:
        process = start_cli_download(server, dest)
        wait_for_part(process, dest)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert everything_under(dest) == []  # neither the .part nor the task directory it made


def test_a_server_that_drips_meets_the_deadline(tmp_path: Path) -> None:
    data = b"y" * 2000
    task = synthetic_task((declared("demo/slow.bin", data),))
    policy = dataclasses.replace(FAST, deadline_s=1.0)
    with FileServer({"demo/slow.bin": Route(data, drip_s=0.05, drip_bytes=10)}) as server:  # 10 s in all
        started = time.monotonic()
        (outcome,) = dl.download([task], tmp_path, base_url=server.url, policy=policy).outcomes
        elapsed = time.monotonic() - started
    assert outcome.status == "failed"
    assert f"{server.url}/demo/slow.bin" in outcome.detail and "deadline of 1 s" in outcome.detail
    assert " of 2000 bytes had arrived" in outcome.detail
    assert elapsed < 4.0, elapsed  # each read gets bytes, so only the deadline ends it
    assert everything_under(tmp_path) == []


def test_cli_deadline_option_exits_2(tmp_path: Path, monkeypatch) -> None:
    with FileServer({STS_DEV: Route(b"z" * 2000, drip_s=0.05, drip_bytes=10)}) as server:
        monkeypatch.setenv(dl.BASE_URL_ENV, server.url)
        result = runner.invoke(app, ["data", "download", "sts", "--role", "dev", "--dest", str(tmp_path),
                                     "--deadline", "1", "--timeout", "5"])
    assert result.exit_code == 2, result.output
    assert "deadline of 1 s (--deadline)" in result.stderr and "bytes had arrived" in result.stderr
    assert everything_under(tmp_path) == []


def test_cli_rejects_unknown_task_version_and_role(tmp_path: Path) -> None:
    for args, text in (
        (["nlii"], "unknown task"),
        (["nli", "--version", "v2"], "--version"),
        (["nli", "--role", "test"], "--role"),
    ):
        result = runner.invoke(app, ["data", "download", *args, "--dest", str(tmp_path)])
        assert result.exit_code == 2 and text in result.stderr, (args, result.output)
