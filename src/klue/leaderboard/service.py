"""What the `klue leaderboard` commands do: create a site, add users, reveal, rescore.

`init` validates everything first (the configuration with file:line, every gold file with its task's
reader), then builds the site in a hidden directory beside SITE and renames it into place: a failed init
leaves nothing behind. Gold files are copied readable by the service's user only (0600) and hashed; each
task's public/private split is recorded (klue.leaderboard.gold).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue import registry
from klue.errors import DataError
from klue.io.hashing import sha256_file
from klue.io.locate import roots_from
from klue.leaderboard.config import SiteConfig, TaskConfig, load_config
from klue.leaderboard.gold import load
from klue.leaderboard.site import SITE_FILE, Site, database_settings, setup
from klue.tasks.reading import read


@dataclass(frozen=True)
class PreparedTask:
    config: TaskConfig
    format: str
    n_public: int
    n_private: int
    order: int
    train_format: str = ""  # the training split's reader (model submissions), "" without one
    n_train: int = 0


def canonical_task(name: str) -> str | None:
    try:
        return registry.get(name).name
    except registry.UnknownTaskError:
        return None


def read_config(path: Path) -> SiteConfig:
    return load_config(path, canonical_task)


def demo_config(data_dir: str | None = None) -> SiteConfig:
    """Every task whose official dev file is under the data directory (KLUE_DATA_DIR)."""
    roots = roots_from(data_dir, None)
    tasks = []
    for task in registry.all_tasks():
        dev = task.file("dev")
        if dev is not None and (roots.klue / dev.path).is_file():
            tasks.append(TaskConfig(task.name, roots.klue / dev.path, 0.5, None))
    if not tasks:
        raise DataError(f"no KLUE dev file under {roots.klue}: set KLUE_DATA_DIR (or --data-dir) to the official "
                        "files, or give --config")
    return SiteConfig("KLUE leaderboard (demo)", tuple(tasks), per_day=5, public_ranking="plain",
                      final_submissions=2)


def prepare(config: SiteConfig) -> list[PreparedTask]:
    """Read every gold file (all problems of all files in one DataError) and split it."""
    out, problems = [], []
    for task_config in config.tasks:
        try:
            gold = load(task_config.name, task_config.gold, task_config.format, config.seed,
                        task_config.private_fraction)
        except DataError as error:
            problems += error.problems
            continue
        if not gold.public or not gold.private:
            problems += DataError(f"{task_config.name}: the split left one part empty ({len(gold.public)} public, "
                                  f"{len(gold.private)} private examples); change private_fraction or add examples",
                                  task_config.gold).problems
            continue
        train_format, n_train = "", 0
        if task_config.train is not None:
            try:
                train = read(gold.task, task_config.train, task_config.train_format, purpose="train",
                             option=f"tasks.{task_config.name}.train_format")
            except DataError as error:
                problems += error.problems
                continue
            train_format, n_train = train.format, len(train.records)
        out.append(PreparedTask(task_config, gold.format, len(gold.public), len(gold.private), gold.task.order,
                                train_format, n_train))
    if problems:
        raise DataError(problems)
    return out


def init_site(root: Path, config: SiteConfig, db_url: str | None, admin: tuple[str, str] | None = None) -> Site:
    """Create the site at `root` (which must not exist, or be an empty directory); with `admin` (name,
    password), its first admin account, in a team of the same name. It configures Django for the directory
    it builds in (renamed to `root` at the end), so call it in a process of its own, as the CLI does."""
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise DataError("already exists and is not empty; choose a new directory for the site", root)
    if db_url is not None:
        database_settings(db_url, Site(root))  # a bad URL is refused before anything is made
    prepared = prepare(config)
    root.parent.mkdir(parents=True, exist_ok=True)
    building = root.parent / f".{root.name}.init-{secrets.token_hex(4)}"
    building.mkdir(mode=0o700)
    try:
        gold_dir = building / "gold"
        gold_dir.mkdir(mode=0o700)
        golds = []
        for task in prepared:
            source = task.config.gold
            (gold_dir / task.config.name).mkdir(mode=0o700)
            target = gold_dir / task.config.name / source.name  # the name kept: formats told by it still are
            shutil.copyfile(source, target)
            os.chmod(target, 0o600)
            train = ("", "")
            if task.config.train is not None:  # the training split of model submissions, kept as the gold is
                (building / "train" / task.config.name).mkdir(mode=0o700, parents=True)
                train_target = building / "train" / task.config.name / task.config.train.name
                shutil.copyfile(task.config.train, train_target)
                os.chmod(train_target, 0o600)
                train = (train_target.relative_to(building).as_posix(), sha256_file(train_target))
            golds.append((task, target.relative_to(building).as_posix(), sha256_file(target), train))
        data = {"secret_key": secrets.token_urlsafe(50), "db": db_url, "config": config.to_json()}
        site_file = building / SITE_FILE
        fd = os.open(site_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
        setup(building)
        from django.core.management import call_command
        from django.db import connection

        from klue.leaderboard.models import SiteState, TaskGold

        call_command("migrate", verbosity=0, interactive=False)
        for task, path, digest, (train_path, train_sha) in golds:
            TaskGold.objects.update_or_create(task=task.config.name, defaults={
                "path": path, "format": task.format, "sha256": digest, "seed": config.seed,
                "private_fraction": task.config.private_fraction, "n_public": task.n_public,
                "n_private": task.n_private, "order": task.order, "train_path": train_path,
                "train_format": task.train_format, "train_sha256": train_sha, "n_train": task.n_train})
        SiteState.objects.get_or_create(pk=1)
        if admin is not None:
            add_user(admin[0], admin[0], True, admin[1])
        connection.close()
        for database_file in building.glob("db.sqlite3*"):
            os.chmod(database_file, 0o600)
        if root.exists():
            root.rmdir()
        building.rename(root)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return Site(root.resolve())


def add_user(name: str, team_name: str, admin: bool, password: str | None) -> str:
    """Create a user in `team_name` (made if new); the new API token, returned once."""
    from django.contrib.auth.models import User
    from django.db import transaction

    from klue.leaderboard.models import ApiToken, Member, Team

    with transaction.atomic():
        if User.objects.filter(username=name).exists():
            raise DataError(f"a user called {name!r} exists already")
        user = User(username=name, is_staff=admin, is_superuser=admin)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
        team, _ = Team.objects.get_or_create(name=team_name)
        Member.objects.create(user=user, team=team)
        return ApiToken.issue(user)


def reveal() -> bool:
    """Make the private scores public; False when they already were."""
    from django.utils import timezone

    from klue.leaderboard.models import SiteState

    state, _ = SiteState.objects.get_or_create(pk=1)
    if state.revealed_at is not None:
        return False
    state.revealed_at = timezone.now()
    state.save(update_fields=["revealed_at"])
    return True


def rescore(submission_id: int) -> int:
    """Queue a new scoring of a submission (its earlier scores stay); the new generation."""
    from django.db import transaction
    from django.db.models import Max

    from klue.leaderboard.jobs import score_submission
    from klue.leaderboard.models import Submission

    with transaction.atomic():
        submission = Submission.objects.filter(pk=submission_id).first()
        if submission is None:
            raise DataError(f"no submission #{submission_id}")
        if submission.upload is None:
            raise DataError(f"submission #{submission_id} was refused unread (over the upload cap): nothing to score")
        generation = (submission.scores.aggregate(top=Max("generation"))["top"] or 0) + (
            1 if submission.scores.exists() else 0)
        score_submission.enqueue(submission_id, generation)
    return generation


def summary(site: Site) -> dict[str, Any]:
    from klue.leaderboard.models import TaskGold

    return {"site": str(site.root), "tasks": {g.task: {"public": g.n_public, "private": g.n_private}
                                              for g in TaskGold.objects.all()}}
