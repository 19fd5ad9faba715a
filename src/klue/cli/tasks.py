"""`klue tasks`: the registered tasks with their official files, sizes, label sets, metrics, protocols."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from klue.io.console import make_console


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)


def describe(task: Any) -> dict[str, Any]:
    from klue import protocols

    return {
        "name": task.name,
        "aliases": list(task.aliases),
        "title": task.title,
        "order": task.order,
        "version": task.version,
        "files": [{"role": f.role, "path": f.path, "git_blob": f.git_blob, "size": f.size} for f in task.files],
        "sizes": dict(task.sizes),
        "labels": list(task.labels),
        "metrics": list(task.metrics),
        "key_metric": task.key_metric,
        "main_metrics": list(task.main_metrics),
        "protocols": protocols.names(task),
        "default_local_protocol": task.default_local_protocol,
        "other_readers": list(task.other_readers),
        "license": task.license,
        "label": task.label,
        "package": task.package,
    }


def _labels(labels: list[str], limit: int = 8) -> str:
    if not labels:
        return "-"
    shown = " ".join(labels[:limit])
    return f"{len(labels)}: {shown}" + (" ..." if len(labels) > limit else "")


def tasks_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print every field of every task as JSON.")] = False,
) -> None:
    """List the registered KLUE tasks: official files (v1.1), example counts, label sets, metrics
    (the first is the key metric), the protocols each can run under and the file formats it reads
    (`--gold-format` / `--input-format`)."""
    from rich.table import Table

    from klue import registry

    described = [describe(task) for task in registry.all_tasks()]
    if as_json:
        print(json.dumps(described, ensure_ascii=False, indent=2))
        return
    table = Table("task", "title", "official files", "train / dev", "labels", "metrics", "protocols", "readers")
    for column in table.columns:
        column.overflow = "fold"
    for entry in described:
        files = "\n".join(f"{f['role']}: {f['path']}" for f in entry["files"])
        sizes = " / ".join(f"{entry['sizes'][k]:,}" for k in ("train", "dev") if k in entry["sizes"])
        protocols = "\n".join(f"{p} (default local)" if p == entry["default_local_protocol"] else p
                              for p in entry["protocols"])
        readers = "\n".join(["official", *entry["other_readers"]])
        table.add_row(entry["name"], entry["title"], files, sizes, _labels(entry["labels"]),
                      ", ".join(entry["metrics"]), protocols, readers)
    make_console().print(table)  # made per call so it follows the terminal width (COLUMNS) of this run
