"""The admin site (Django's, for staff accounts only): teams, members, submissions, the tasks' gold
records, and `reveal` as an action on the site state. The private scores have no admin page of their own:
they are shown by the rankings after `reveal`."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from klue.leaderboard.models import Member, ModelJob, ModelSubmission, SiteState, Submission, TaskGold, Team


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


@admin.register(Member)
class MemberAdmin(admin.ModelAdmin):
    list_display = ("user", "team")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "team", "name", "status", "created_at", "selected")
    list_filter = ("task", "status")
    exclude = ("upload",)
    readonly_fields = ("team", "user", "task", "created_at", "status", "filename", "size", "messages")


@admin.register(ModelSubmission)
class ModelSubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "spec", "family", "source", "team", "name", "created_at")
    list_filter = ("family",)
    readonly_fields = ("team", "user", "spec", "family", "source", "store_name", "hub_id", "created_at")


@admin.register(ModelJob)
class ModelJobAdmin(admin.ModelAdmin):
    """A model submission's job on one task; its cell's own files (log.txt, results.json) are in SITE/jobs/."""

    list_display = ("id", "submission", "team", "state", "attempts", "started_at", "wall_s")
    list_filter = ("state",)
    readonly_fields = ("submission", "team", "state", "created_at", "started_at", "finished_at", "attempts", "slot",
                       "progress", "log", "wall_s", "cell_s")


@admin.register(TaskGold)
class TaskGoldAdmin(admin.ModelAdmin):
    list_display = ("task", "n_public", "n_private", "n_train", "sha256")
    readonly_fields = ("task", "path", "format", "sha256", "seed", "private_fraction", "n_public", "n_private",
                       "train_path", "train_format", "train_sha256", "n_train")


@admin.action(description="Reveal the private scores (cannot be undone)")
def reveal(modeladmin: Any, request: HttpRequest, queryset: Any) -> None:
    SiteState.objects.update_or_create(pk=1, defaults={"revealed_at": timezone.now()})


@admin.register(SiteState)
class SiteStateAdmin(admin.ModelAdmin):
    list_display = ("id", "revealed_at")
    readonly_fields = ("revealed_at",)
    actions = (reveal,)
