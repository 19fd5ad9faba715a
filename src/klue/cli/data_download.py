"""`klue data download`: fetch (or import) the official files, verified, into the data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from klue.cli._common import fail, stderr, stdout
from klue.io.choices import choice_of
from klue.io.release import FileRole

ROLES: tuple[FileRole, ...] = ("train", "dev", "resource")


def register(app: typer.Typer) -> None:
    from klue.cli.data import data_app

    data_app.command("download")(download_command)


def _tasks(names: list[str] | None) -> list[Any]:
    from klue import registry

    if not names:
        return registry.all_tasks()
    try:
        # "ner nli", "ner,nli" and "all" all work: resolve takes a comma-separated list.
        return registry.resolve(",".join(names))
    except registry.UnknownTaskError as error:
        fail(str(error))


def download_command(
    tasks: Annotated[
        list[str] | None,
        typer.Argument(help="Tasks to fetch (short names or aliases, or `all`; default: all).", show_default=False),
    ] = None,
    version: Annotated[
        str, typer.Option("--version", help="v1.1: the official files, by git blob id; v1: the older tarballs "
                          "the Hugging Face builder used (sha256), unpacked to <name>-v1/.")
    ] = "v1.1",
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Where to put the files (default: the data directory).")
    ] = None,
    from_dir: Annotated[
        Path | None, typer.Option("--from", help="Import a local copy instead of downloading: a directory in "
                                  "the same layout (v1.1 official paths; v1 the tarballs by file name).")
    ] = None,
    data_dir: Annotated[
        str | None, typer.Option("--data-dir", help="The data directory (default: KLUE_DATA_DIR, then the "
                                 "per-user cache).")
    ] = None,
    roles: Annotated[
        list[str] | None, typer.Option("--role", help="Only files of this role: train, dev or resource "
                                       "(repeatable; default: all; v1.1 only).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="A mirror to fetch from (default: KLUE_DOWNLOAD_BASE_URL "
                                 "or the KLUE GitHub repository for v1.1; KLUE_DOWNLOAD_V1_BASE_URL or the "
                                 "declared URLs for v1).")
    ] = None,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Tries per file for broken transfers.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Network timeout in seconds, for "
                                           "connecting and for each read.")] = 30.0,
    deadline: Annotated[float, typer.Option("--deadline", min=0.1, help="Seconds the whole transfer of one "
                                            "file may take, retries included (a server that drips bytes "
                                            "never trips --timeout).")] = 1800.0,
) -> None:
    """Download the official KLUE files, verify each one, and place it atomically.

    Every file is checked against the identity its task declares (git blob id for v1.1, sha256 and size
    for v1 tarballs); one that does not match is deleted and reported. Files already present and
    verified are skipped. Broken transfers are retried with backoff (resumed where the server allows);
    the temporary .part file of a download that was killed is removed by the next run.
    Without a network, use `--from DIR` to import a local copy, or point --data-dir / KLUE_DATA_DIR at
    files you already have. Exit code 0 when every requested file is in place and verified, 3 when the host
    cannot be reached at all, 2 otherwise.
    """
    from rich.markup import escape
    from rich.table import Table

    from klue.io import download as dl
    from klue.io.locate import data_root
    from klue.io.progress import download_bars

    if version not in dl.VERSIONS:
        fail(f"--version {version!r} is not one of {', '.join(dl.VERSIONS)}")
    bad_roles = sorted(set(roles or ()) - set(ROLES))
    if bad_roles:
        fail(f"--role {', '.join(bad_roles)} is not one of {', '.join(ROLES)}")
    selected = _tasks(tasks)
    target = dest.expanduser() if dest is not None else data_root(data_dir).path
    policy = dl.RetryPolicy(attempts=attempts, timeout_s=timeout, deadline_s=deadline)
    progress = download_bars(stderr, terminal_only=True)
    try:
        with dl.sigterm_exits(), progress:  # SIGTERM, like Ctrl-C, removes the .part being written
            report = dl.download(
                selected, target, version=choice_of(version, dl.VERSIONS, "--version"), base_url=base_url,
                from_dir=from_dir.expanduser() if from_dir is not None else None,
                roles=[choice_of(r, ROLES, "--role") for r in roles] if roles else None, policy=policy,
                progress=progress,
            )
    except dl.DownloadError as error:
        fail(str(error), code=3 if isinstance(error, dl.HostUnreachableError) else 2)

    table = Table("task", "file", "status", "bytes", "detail", title=f"{version} files in {target}")
    for column in table.columns:
        column.overflow = "fold"
    colours = {"present": "green", "downloaded": "green", "imported": "green", "failed": "red", "missing": "red"}
    for outcome in report.outcomes:
        status = f"[{colours[outcome.status]}]{outcome.status}[/]"
        size = f"{outcome.size:,}" if outcome.size is not None else ""
        table.add_row(outcome.task, escape(outcome.path), status, size, escape(outcome.detail))
    stdout.print(table)
    if not report.outcomes:
        fail("the selected tasks declare no files for this version and role")
    problems = report.problems
    if problems:
        first = problems[0]
        fail(f"{len(problems)} of {len(report.outcomes)} files are not in place in {target} (first: {first.path}: "
             f"{first.status}{', ' + first.detail if first.detail else ''})")
