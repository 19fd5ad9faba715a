"""`klue leaderboard`: host a KLUE leaderboard with hidden labels (docs/leaderboard.md)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import fail

leaderboard_app = typer.Typer(
    no_args_is_help=True,
    help="Host a leaderboard: participants send prediction files, the site scores them against gold they never "
         "see, with intervals, significance groups, quotas and a private part revealed at the end "
         "(docs/leaderboard.md).")

user_app = typer.Typer(no_args_is_help=True, help="Users and their teams.")
leaderboard_app.add_typer(user_app, name="user")

SiteArg = Annotated[Path, typer.Argument(help="The site directory (made by `klue leaderboard init`).",
                                         show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(leaderboard_app, name="leaderboard")


def _setup(site: Path) -> None:
    from klue.leaderboard.site import setup

    setup(site)


@leaderboard_app.command("init")
def init_command(
    site: Annotated[Path, typer.Argument(help="The site directory to create (new, or empty).", show_default=False)],
    config: Annotated[Path | None, typer.Option(
        "--config", help="leaderboard.yaml: title, tasks (gold files, private fractions), quota, public_ranking, "
        "final_submissions (docs/leaderboard.md). Unknown keys are errors.", show_default=False)] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Instead of --config: every task whose official dev set is "
                                       "under KLUE_DATA_DIR (or --data-dir), and one admin account whose password "
                                       "is printed.")] = False,
    db: Annotated[str | None, typer.Option("--db", help="postgresql://USER:PASSWORD@HOST:PORT/NAME: keep the data "
                                           "in PostgreSQL (for several machines); default SQLite in the site "
                                           "directory.", show_default=False)] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", help="The official KLUE files, for --demo "
                                                 "(default KLUE_DATA_DIR).", show_default=False)] = None,
) -> None:
    """Create a leaderboard site: validate the configuration, read every gold file with its task's reader,
    copy it into SITE readable by you only, split it into a public and a private part, and create the
    database. A problem stops it with file:line (exit 2) and nothing created."""
    from klue.leaderboard import service

    if demo == (config is not None):
        fail("give either --config FILE or --demo")
    site_config = service.read_config(config) if config is not None else service.demo_config(data_dir)
    password = secrets.token_urlsafe(12) if demo else None
    made = service.init_site(site, site_config, db, admin=("admin", password) if password else None)
    print(f"created the leaderboard site {made.root}")
    for task in site_config.tasks:
        print(f"  {task.name}: gold {task.gold}")
    if password:
        print(f"admin account: user admin, password {password}")
    print(f"next: klue leaderboard serve {site}")


@user_app.command("add")
def user_add_command(
    site: SiteArg,
    name: Annotated[str, typer.Option("--name", help="The user name.", show_default=False)],
    team: Annotated[str, typer.Option("--team", help="The user's team (created if new).", show_default=False)],
    admin: Annotated[bool, typer.Option("--admin", help="May use the admin pages (/admin/).")] = False,
    password_env: Annotated[str | None, typer.Option(
        "--password-env", help="Environment variable holding the password for logging in to the pages; without "
        "it the user has an API token only.", show_default=False)] = None,
) -> None:
    """Add a user to TEAM (created if new); prints its new API token once (only a hash is kept: the token
    cannot be shown again)."""
    password = None
    if password_env is not None:
        password = os.environ.get(password_env)
        if not password:
            fail(f"--password-env {password_env}: the variable is not set or empty")
    _setup(site)
    from klue.leaderboard import service

    token = service.add_user(name, team, admin, password)
    print(f"user {name} (team {team}){' admin' if admin else ''} added; API token (shown once):", file=sys.stderr)
    print(token)


@leaderboard_app.command("serve")
def serve_command(
    site: SiteArg,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (put a TLS proxy in front for "
                                      "anything but 127.0.0.1: docs/leaderboard.md).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Web server processes (gunicorn).")] = 2,
    scorers: Annotated[int, typer.Option("--scorers", min=0, help="Scoring worker processes on this machine "
                                         "(more on other machines: `klue leaderboard worker`).")] = 1,
    model_workers: Annotated[int | None, typer.Option(
        "--model-workers", min=0, help="Worker processes that run model submissions' jobs, apart from the scoring "
        "workers (default: 1 on a site with a training split, else 0).", show_default=False)] = None,
) -> None:
    """Serve the site: gunicorn with WORKERS web processes, SCORERS scoring workers and the model-job workers
    (each restarted when it dies); Ctrl-C or SIGTERM stops all of them."""
    from klue.leaderboard.serve import Supervisor
    from klue.leaderboard.site import Site

    data = Site(site).read()  # not a site: one line, exit 2
    if model_workers is None:
        model_workers = int(any(t.get("train") for t in data["config"]["tasks"].values()))
    raise typer.Exit(Supervisor(site.resolve(), host, port, workers, scorers, model_workers).run())


@leaderboard_app.command("worker")
def worker_command(
    site: SiteArg,
    max_tasks: Annotated[int | None, typer.Option("--max-tasks", min=1, help="Stop after this many jobs.",
                                                  show_default=False)] = None,
    models: Annotated[bool, typer.Option("--models", help="Run model submissions' jobs instead of scoring jobs "
                                         "(docs/leaderboard.md, \"Model submissions\").")] = False,
) -> None:
    """Run scoring jobs only, or with --models model submissions' jobs (for more machines on one PostgreSQL
    database: each needs a copy of SITE with its gold files)."""
    _setup(site)
    from klue.leaderboard.worker import MODELS_QUEUE, SCORING_QUEUE, run_worker

    run_worker(max_tasks=max_tasks, queue=MODELS_QUEUE if models else SCORING_QUEUE)


@leaderboard_app.command("reveal")
def reveal_command(site: SiteArg) -> None:
    """Make the private scores public: the private ranking appears on every page and API answer."""
    _setup(site)
    from klue.leaderboard import service

    print("revealed the private scores" if service.reveal() else "the private scores were revealed already")


@leaderboard_app.command("rescore")
def rescore_command(
    site: SiteArg,
    submission: Annotated[int, typer.Option("--submission", help="The submission's id.", show_default=False)],
) -> None:
    """Score a submission again (after a metric fix): a new score joins its history, the old ones stay."""
    _setup(site)
    from klue.leaderboard import service

    generation = service.rescore(submission)
    print(f"queued submission #{submission} for scoring (generation {generation})")


# The model store (docs/leaderboard.md, "Model store"): what model submissions may name.
model_app = typer.Typer(no_args_is_help=True, help="The site's model store: models a submission may name "
                        "(`emb:NAME`, `hf:NAME`, `NAME`), checked on the way in (safetensors or GGUF only, no "
                        "pickles, no remote code).")
leaderboard_app.add_typer(model_app, name="model")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


@model_app.command("add")
def model_add_command(
    site: SiteArg,
    name: Annotated[str, typer.Argument(help="The name submissions use (e5-small, smollm2.gguf): letters, digits, "
                                        "'.', '_', '-'.", show_default=False)],
    path: Annotated[Path, typer.Argument(help="A Hugging Face model directory with safetensors weights, or one GGUF "
                                         "file.", show_default=False)],
    link: Annotated[bool, typer.Option("--link", help="Hard-link the files instead of copying them (same file system "
                                       "only). Every job checks the stored SHA-256 first, so a source file changed "
                                       "later is refused, not run.")] = False,
) -> None:
    """Check a model and copy it into the site's store as NAME: refused with the reason (exit 2, nothing stored)
    when it holds a pickle, asks for remote code, has no safetensors weights, or is a file that is not GGUF."""
    from klue.io.progress import ProgressBar
    from klue.leaderboard.model_store import add_model

    bars: list[ProgressBar] = []  # made at the first bytes, when the total is known

    def progress(done: int, total: int) -> None:
        if not bars:
            bars.append(ProgressBar(f"copy {name}", total=total, in_bytes=True))
        bars[0].update(done)

    try:
        stored = add_model(site, name, path, link=link, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    print(f"stored {stored.name}: {stored.kind}, {stored.bytes:,} bytes ({_mib(stored.bytes)}), "
          f"sha256 {stored.sha256}")
    print(f"  at {stored.path}")


@model_app.command("list")
def model_list_command(site: SiteArg) -> None:
    """The models in the site's store: name, kind, size, SHA-256, when added."""
    from klue.leaderboard.model_store import list_models

    models = list_models(site)
    if not models:
        print(f"the store is empty; add a model with `klue leaderboard model add {site} NAME PATH`")
        return
    width = max(len(m.name) for m in models)
    for model in models:
        print(f"{model.name:<{width}}  {model.kind:<6}  {_mib(model.bytes):>12}  sha256 {model.sha256}  "
              f"added {model.added_at}")


@model_app.command("remove")
def model_remove_command(
    site: SiteArg,
    name: Annotated[str, typer.Argument(help="The stored model's name.", show_default=False)],
) -> None:
    """Take a model out of the store (submissions naming it are refused from now on)."""
    from klue.leaderboard.model_store import remove_model

    remove_model(site, name)
    print(f"removed {name} from the store")
