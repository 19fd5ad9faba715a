"""`klue data`: check data files (`validate`), see what data is here (`summary`), and write a task's
official files as a Hugging Face `datasets` copy (`export`).

`klue data download` is added to `data_app` by `klue.cli.data_download`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from klue.cli._common import fail, stderr, stdout

data_app = typer.Typer(
    name="data",
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="KLUE data: validate files, summarise what is here, export a Hugging Face copy (and `download`).",
)

DataDirOption = Annotated[str | None, typer.Option(
    "--data-dir", help="Directory in the official KLUE v1.1 layout (default: KLUE_DATA_DIR, then the cache).")]
ExtraDirOption = Annotated[str | None, typer.Option(
    "--extra-data-dir", help="Directory holding klue-partial/, klue-derived/, korean/ "
    "(default: KLUE_EXTRA_DATA_DIR).")]


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")


@data_app.command("validate")
def validate_command(
    paths: Annotated[list[Path], typer.Argument(help="Data files or directories (searched for data files).")],
    task: Annotated[str | None, typer.Option("--task", "-t", help="Read every file as this task "
                                             "(default: tell from the file name).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
) -> None:
    """Read data files with their task's reader and list EVERY problem (file:line or JSON path).

    Warnings point at known upstream quirks (e.g. ill-formed IOB2 in a few NER sentences); errors make
    a file unreadable for training or scoring. Exit code 0 when no file has errors, 2 otherwise.
    """
    from rich.markup import escape

    from klue.errors import DataError
    from klue.validate import validate_paths

    try:
        reports = validate_paths(paths, task)
    except DataError as error:  # an unknown --task: exit 2 here too, not only through `main`
        fail(error.summary())
    if not reports:
        fail("no data files found in " + ", ".join(map(str, paths)))
    if as_json:
        print(json.dumps([r.to_json() for r in reports], ensure_ascii=False, indent=2))
    else:
        for report in reports:
            status = "[red]FAIL[/red]" if report.errors else "[green]ok[/green]"
            what = f"{report.task} ({report.reader} reader)" if report.task else "unknown task"
            stdout.print(f"{status} {escape(str(report.path))}: {what}, {report.n_records:,} records, "
                         f"{len(report.errors)} errors, {len(report.warnings)} warnings", highlight=False,
                         soft_wrap=True)
            for problem in report.problems:
                stdout.print(f"  {problem}", markup=False, highlight=False, soft_wrap=True)
    if any(r.errors for r in reports):
        raise typer.Exit(2)


def _file_row(task: Any, entry: Any, root: Path, count: bool) -> dict[str, Any]:
    from klue.io.hashing import git_blob_sha1
    from klue.tasks.base import OFFICIAL_READER
    from klue.tasks.reading import read

    path = root / entry.path
    row: dict[str, Any] = {"task": task.name, "role": entry.role, "path": entry.path, "present": path.is_file(),
                           "official_size": entry.size, "expected_count": task.sizes.get(entry.role)}
    if not row["present"]:
        return row
    row["size"] = path.stat().st_size
    row["git_blob"] = git_blob_sha1(path)
    row["blob_matches"] = row["git_blob"] == entry.git_blob
    if count and entry.role != "resource":
        reading = read(task, path, OFFICIAL_READER, purpose="validate")
        row["count"] = len(reading.records)
        row["errors"] = len(reading.errors)
    return row


def summarise(data_dir: str | None, extra_data_dir: str | None, count: bool = True) -> dict[str, Any]:
    """Every task's official files and protocols as found under the roots, with what to do about gaps."""
    from klue import protocols, registry
    from klue.io.locate import data_root, how_to_get, how_to_get_extra, roots_from

    root = data_root(data_dir)
    roots = roots_from(data_dir, extra_data_dir)
    tasks = []
    for task in registry.all_tasks():
        files = [_file_row(task, entry, roots.klue, count) for entry in task.files]
        extra: list[dict[str, Any]] = []
        for name in protocols.names(task):
            for ref in protocols.file_refs(task, name):
                if ref.root == "extra" and ref.path not in {e["path"] for e in extra}:
                    extra.append({"path": ref.path, "present": ref.exists(roots), "protocol": name})
        todo = []
        if any(not f["present"] for f in files):
            todo.append(how_to_get(task.name))
        if any(not e["present"] for e in extra):
            todo.append(how_to_get_extra())
        tasks.append({"task": task.name, "title": task.title, "files": files, "extra_files": extra,
                      "protocols_available": protocols.available(task, roots), "todo": todo})
    return {"data_dir": str(root.path), "data_dir_source": root.source,
            "extra_data_dir": str(roots.extra) if roots.extra else None, "tasks": tasks}


@data_app.command("summary")
def summary_command(
    data_dir: DataDirOption = None,
    extra_data_dir: ExtraDirOption = None,
    count: Annotated[bool, typer.Option("--count/--no-count", help="Read each present file to count its "
                                        "examples.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Where the data is and what is in it, task by task, with what to do about missing files.

    For every official file: present or missing, size, example count, and whether its git blob id
    matches the official release; then the extra files local protocols use and the protocols that can
    run here.
    """
    from rich.table import Table

    with stderr.status("reading the data files"):
        summary = summarise(data_dir, extra_data_dir, count)
    if as_json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    stdout.print(f"data dir: {summary['data_dir']} (from {summary['data_dir_source']}); extra data dir: "
                 f"{summary['extra_data_dir'] or 'not set (--extra-data-dir / KLUE_EXTRA_DATA_DIR)'}",
                 highlight=False)
    table = Table("task", "role", "file", "status", "bytes", "examples", "git blob")
    for column in table.columns:
        column.overflow = "fold"
    for entry in summary["tasks"]:
        for row in entry["files"]:
            if not row["present"]:
                table.add_row(entry["task"], row["role"], row["path"], "[red]missing[/red]", "", "", "")
                continue
            examples = ""
            if "count" in row:
                expected = row["expected_count"]
                examples = f"{row['count']:,}" + (f" (official {expected:,})" if expected not in (None,
                                                                                         row["count"]) else "")
                if row.get("errors"):
                    examples += f" [red]{row['errors']} errors[/red]"
            blob = "[green]matches[/green]" if row["blob_matches"] else f"[yellow]differs[/yellow] {row['git_blob']}"
            table.add_row(entry["task"], row["role"], row["path"], "present", f"{row['size']:,}", examples, blob)
        for row in entry["extra_files"]:
            status = "present" if row["present"] else "[red]missing[/red]"
            table.add_row(entry["task"], f"extra, for {row['protocol']}", row["path"], status, "", "", "")
    stdout.print(table)
    for entry in summary["tasks"]:
        available = ", ".join(entry["protocols_available"]) or "none"
        stdout.print(f"{entry['task']}: protocols that can run here: {available}", highlight=False)
        for todo in entry["todo"]:
            stdout.print(f"  to get the missing files: {todo}", markup=False, highlight=False)


EXPORT_FORMATS = ("hf",)


@data_app.command("export")
def export_command(
    task_name: Annotated[str, typer.Option("--task", "-t", help="The task whose official files to export.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write (replaced atomically if it is an "
                                      "earlier export; any other existing directory is refused).")],
    export_format: Annotated[str, typer.Option("--format", help="Output format: hf (a `datasets` "
                                               "save_to_disk DatasetDict).")] = "hf",
    data_dir: DataDirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")] = False,
) -> None:
    """Write a task's official train and dev files as a Hugging Face `datasets` copy.

    The copy is a DatasetDict (`datasets.load_from_disk(DIR)`) with one split per file here: `train` and
    `validation`. Its columns are the hub's `klue/klue` ones plus the official fields the hub copy lacks,
    and its label columns are ClassLabels in the OFFICIAL label order, so a loaded copy shows label names.
    `klue train --train DIR:validation` (or any `files` protocol) reads it back into the same records.
    Needs the optional `datasets` package (`pip install 'klue\\[hf]'`).
    """
    from klue import registry
    from klue.errors import DataError
    from klue.io.locate import roots_from
    from klue.tasks.hf_copy import export

    try:
        if export_format not in EXPORT_FORMATS:
            raise DataError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, not {export_format!r}")
        task = registry.get(task_name)
        with stderr.status(f"exporting {task.name}"):
            written = export(task, roots_from(data_dir, None), out)
    except DataError as error:
        fail(error.summary(name_errors=False))
    if as_json:
        print(json.dumps({"task": task.name, "format": export_format, "out": str(written.out),
                          "splits": [vars(s) for s in written.splits], "missing": list(written.missing)},
                         ensure_ascii=False, indent=2))
        return
    for split in written.splits:
        stdout.print(f"{task.name} {split.split}: {split.n_records:,} records from {split.path} "
                     f"(git blob {split.git_blob[:12]})", markup=False, highlight=False, soft_wrap=True)
    for path in written.missing:
        stdout.print(f"  not here, not exported: {path}", markup=False, highlight=False, soft_wrap=True)
    stdout.print(f"wrote {written.out} (datasets.load_from_disk)", markup=False, highlight=False, soft_wrap=True)
