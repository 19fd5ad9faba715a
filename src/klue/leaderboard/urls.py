"""The site's pages and their JSON twins under /api/."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from klue.leaderboard import views

urlpatterns = [
    path("", views.board_page, name="board"),
    path("api/leaderboard", views.board_api),
    path("tasks/<str:task>", views.task_page, name="task"),
    path("api/tasks/<str:task>", views.task_api),
    path("submissions/<int:pk>", views.submission_page, name="submission"),
    path("api/submissions/<int:pk>", views.submission_api),
    path("submissions/<int:pk>/select", views.select_page, name="select"),
    path("api/submissions/<int:pk>/select", views.select_api),
    path("submissions/<int:pk>/cancel", views.cancel_page, name="cancel"),
    path("api/submissions/<int:pk>/cancel", views.cancel_api),
    path("submit", views.submit_page, name="submit"),
    path("api/submissions", views.submit_api),
    path("api/check", views.check_api),
    path("team", views.team_page, name="team"),
    path("api/team", views.team_api),
    path("login", views.login_page, name="login"),
    path("logout", views.logout_page, name="logout"),
    path("healthz", views.healthz),
    path("status", views.status_page, name="status"),
    path("api/status", views.status_api),
    path("style.css", views.stylesheet),
    path("admin/", admin.site.urls),
]
