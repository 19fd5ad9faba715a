"""The leaderboard end to end, as its users meet it: one real server per module (`klue leaderboard serve` on
SQLite, 127.0.0.1), submissions from `klue submit`, the API and a real browser (chromium through Selenium:
log in, upload, read the score and the rank), ranks with intervals and groups, quotas that count every
attempt (under concurrency too), nothing private before `reveal`, and the security rules (tokens, CSRF, 404s,
escaping, headers, admin, login rate limit). The reveal test runs last: it cannot be undone on the module's
site."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import INTERVAL, browser, log_in, upload, wait_text  # noqa: F401  # browser: the fixture, by name
from live_site import klue, tls

from cli_in_process import Done, klue_in_process
from conftest import PASSWORD, Served, csrf_of, session

pytestmark = [pytest.mark.slow, pytest.mark.longest]

XSS = "<script>alert(1)</script>"


def submit_cli(served: Served, user: str, predictions: Path, *args: str) -> Done:
    """`klue submit` in this process (tests/cli_in_process.py): the subject is what it sends, prints and exits
    with, not its process (a process each cost about 1.5 CPU-s)."""
    return klue_in_process("submit", "--server", served.server.url, "--task", "nli", "--predictions",
                           str(predictions), *args, environ={**os.environ, "KLUE_TOKEN": served.tokens[user]})


def submit(served: Served, user: str, predictions: Path, name: str = "") -> dict[str, Any]:
    answer = served.server.submit(served.tokens[user], predictions, name=name)
    assert answer.status_code == 201, answer.text
    pk = answer.json()["id"]
    return served.server.wait_scored(served.tokens[user], [pk])[pk]


@pytest.fixture(scope="module")
def scored(nli_server: Served) -> dict[str, Any]:
    """alice from the CLI (0.9 public), bob from the API (0.6 public): both scored."""
    done = submit_cli(nli_server, "alice", nli_server.predictions(0.9, 0.45, 1), "--name", "good", "--wait",
                      "--json")
    assert done.returncode == 0, done.stderr
    alice = json.loads(done.stdout)
    bob = submit(nli_server, "bob", nli_server.predictions(0.6, 0.85, 2), name=XSS)
    return {"alice": alice, "bob": bob}


def test_cli_submission_scored_with_an_interval(nli_server: Served, scored: dict[str, Any]) -> None:
    alice = scored["alice"]
    assert alice["status"] == "scored"
    scores = alice["scores"]
    low, high = scores["interval"]
    assert low < scores["task_score"] < high
    assert 80 < scores["task_score"] < 97
    assert scores["metric_versions"]["accuracy"] and scores["part"] == "public"
    done = submit_cli(nli_server, "alice", nli_server.predictions(0.9, 0.45, 1, name="again.jsonl"), "--wait")
    assert done.returncode == 0
    assert re.search(r"public nli score \d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]", done.stdout), done.stdout


def test_ranks_intervals_and_groups(nli_server: Served, scored: dict[str, Any]) -> None:
    board = nli_server.server.get("/api/leaderboard").json()
    assert board["revealed"] is False and "private" not in board
    rows = board["public"]["tasks"]["nli"]
    assert [(r["team"], r["rank"]) for r in rows] == [("Team A", 1), (XSS, 2)]
    assert rows[1]["p_value"] < 0.05 and "separates them" in rows[1]["relation"]
    assert all(r["interval"][0] < r["score"] < r["interval"][1] for r in rows)
    klue_rows = board["public"]["klue"]  # one task: every team with it has a KLUE score
    assert [r["team"] for r in klue_rows] == ["Team A", XSS]
    task = nli_server.server.get("/api/tasks/nli").json()
    assert task["metrics"] == ["accuracy"] and "accuracy" in task["public"][0]["scores"]
    page = nli_server.server.get("/tasks/nli").text
    assert "separates them" in page and "accuracy" in page


def test_browser_logs_in_uploads_and_reads_the_rank(nli_server: Served, scored: dict[str, Any],
                                                   browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """bob's team (`<script>...`) through chromium: the form's submission is scored, its page shows the score
    in its interval, and the board shows the team's name as text, its rank, the same interval and the model
    as `name (#id)`."""
    from selenium.webdriver.common.by import By

    url = nli_server.server.url
    log_in(browser, url, "bob", PASSWORD)
    browser.get(f"{url}/submit")
    assert "resets at" in browser.find_element(By.TAG_NAME, "body").text  # the page says when the quota resets
    # 0.7 public: above bob's first submission (0.6), below Team A's 0.9, so it is bob's entry, second.
    pk = upload(browser, url, "nli", "브라우저 모델", nli_server.predictions(0.7, 0.85, 9, name="browser.jsonl"))
    assert wait_text(browser, "#status", "scored") == "scored"
    score = float(browser.find_element(By.ID, "task-score").text)
    interval = INTERVAL.match(browser.find_element(By.ID, "task-interval").text)
    assert interval and float(interval[1]) <= score <= float(interval[2])

    browser.get(url + "/")
    table = browser.find_element(By.CSS_SELECTOR, "h2 a[href='/tasks/nli']").find_element(
        By.XPATH, "../following-sibling::table[1]")
    rows = [[cell.text for cell in tr.find_elements(By.TAG_NAME, "td")]
            for tr in table.find_elements(By.TAG_NAME, "tr")[1:]]
    ours = next(row for row in rows if row[1] == XSS)  # the script tag shows as text: it was escaped
    assert ours[0] == "2" and ours[2] == f"브라우저 모델 (#{pk})", rows
    assert float(ours[3]) == pytest.approx(score, abs=0.006) and ours[4] == f"[{interval[1]}, {interval[2]}]"
    assert ours[5]  # the row says in words how it stands against the one above
    assert browser.execute_script("return document.querySelectorAll('td.team script').length") == 0
    browser.save_screenshot(str(tmp_path / "leaderboard-board.png"))  # for a person to look at
    assert (tmp_path / "leaderboard-board.png").stat().st_size > 10_000


def test_final_submissions_are_marked_with_select(nli_server: Served, scored: dict[str, Any]) -> None:
    environ = {**os.environ, "KLUE_TOKEN": nli_server.tokens["bob"]}

    def select(pk: int) -> Done:
        return klue_in_process("submit", "--server", nli_server.server.url, "--select", str(pk), environ=environ)

    assert select(scored["bob"]["id"]).returncode == 0
    assert nli_server.server.get(f"/api/submissions/{scored['bob']['id']}", nli_server.tokens["bob"]).json()["selected"]
    other = select(scored["alice"]["id"])  # another team's: as if it did not exist
    assert other.returncode == 2 and "no such submission" in other.stderr


def test_names_are_escaped_everywhere(nli_server: Served, scored: dict[str, Any]) -> None:
    rows = nli_server.server.get("/api/leaderboard").json()["public"]["tasks"]["nli"]
    entry = next(r["submission"] for r in rows if r["team"] == XSS)  # on the board: its page is public
    for path in ("/", "/tasks/nli", f"/submissions/{entry}"):
        page = nli_server.server.get(path).text
        assert XSS not in page, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, path


def test_security_headers_and_cookies(nli_server: Served) -> None:
    for path in ("/gold/nli/nli_dev.json", "/site.json", "/db.sqlite3", "/static/../site.json"):
        assert nli_server.server.get(path).status_code == 404, path  # nothing of the site directory is served
    answer = nli_server.server.get("/")
    assert "default-src 'none'" in answer.headers["Content-Security-Policy"]
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    client = session(nli_server, "alice")
    cookie = next(c for c in client.cookies.jar if c.name == "sessionid")
    assert cookie.has_nonstandard_attr("HttpOnly")
    assert (cookie.get_nonstandard_attr("SameSite") or "").lower() in ("lax", "strict")


def test_tokens(nli_server: Served, tmp_path: Path) -> None:
    predictions = nli_server.predictions(0.5, 0.5, 3)
    bad = nli_server.server.submit("x" * 43, predictions)
    assert bad.status_code == 401
    none = httpx.post(f"{nli_server.server.url}/api/submissions", data={"task": "nli"}, timeout=30,
                      verify=tls())
    assert none.status_code == 401
    token = nli_server.tokens["alice"]
    assert len(token) >= 43  # 32 random bytes, URL-safe base64
    stored = nli_server.site.query("SELECT digest FROM leaderboard_apitoken")
    assert (hashlib.sha256(token.encode()).hexdigest(),) in stored
    assert all(token not in row[0] for row in stored)
    done = klue_in_process("submit", "--server", nli_server.server.url, "--task", "nli", "--predictions",
                           str(predictions), environ={k: v for k, v in os.environ.items() if k != "KLUE_TOKEN"})
    assert done.returncode == 2 and "KLUE_TOKEN" in done.stderr


def test_forms_need_csrf(nli_server: Served) -> None:
    client = session(nli_server, "alice")
    predictions = nli_server.predictions(0.5, 0.5, 4)
    with predictions.open("rb") as handle:
        refused = client.post("/submit", data={"task": "nli"}, files={"predictions": handle})
    assert refused.status_code == 403
    with predictions.open("rb") as handle:
        sent = client.post("/submit", data={"task": "nli", "name": "form", "csrfmiddlewaretoken": csrf_of(client, "/submit")},
                           files={"predictions": handle})
    assert sent.status_code == 302 and re.match(r"/submissions/\d+", sent.headers["location"])
    anonymous = httpx.post(f"{nli_server.server.url}/login", data={"username": "alice", "password": PASSWORD},
                           verify=tls())
    assert anonymous.status_code == 403


def test_other_teams_submissions_answer_404(nli_server: Served, scored: dict[str, Any]) -> None:
    rejected = nli_server.server.submit(nli_server.tokens["alice"], _bad_file(nli_server, "x.jsonl")).json()["id"]
    nli_server.server.wait_scored(nli_server.tokens["alice"], [rejected])
    bob = nli_server.tokens["bob"]
    assert nli_server.server.get(f"/api/submissions/{rejected}", bob).status_code == 404
    assert nli_server.server.get(f"/submissions/{rejected}").status_code == 404
    assert nli_server.server.get(f"/api/submissions/{rejected}", nli_server.tokens["alice"]).status_code == 200
    assert nli_server.server.get(f"/api/submissions/{rejected}", nli_server.tokens["root"]).status_code == 200
    assert nli_server.server.get("/api/submissions/999999", bob).status_code == 404
    entry = nli_server.server.get(f"/api/submissions/{scored['alice']['id']}", bob)
    assert entry.status_code == 200 and "messages" not in entry.json()  # on the board: public, not its messages


def test_admin_pages_for_admins_only(nli_server: Served) -> None:
    alice = session(nli_server, "alice")
    assert alice.get("/admin/").status_code == 302
    root = session(nli_server, "root")
    page = root.get("/admin/")
    assert page.status_code == 200 and "Submissions" in page.text
    assert httpx.get(f"{nli_server.server.url}/admin/", timeout=30, verify=tls()).status_code == 302


def _bad_file(served: Served, name: str) -> Path:
    path = served.files / name
    path.write_text("".join(json.dumps({"guid": r["guid"], "label": "perhaps"}) + "\n" for r in served.gold))
    return path


def test_sixth_attempt_refused_whatever_the_first_five(nli_server: Served) -> None:
    token = nli_server.tokens["quinn"]
    too_big = nli_server.files / "big.jsonl"
    too_big.write_bytes(b" " * (1 << 20) + b"x")  # over the site's 1 MiB cap
    firsts = [_bad_file(nli_server, "bad1.jsonl"), too_big, _bad_file(nli_server, "bad2.jsonl"),
              nli_server.predictions(0.7, 0.7, 5), nli_server.predictions(0.7, 0.7, 6)]
    ids = []
    for path in firsts:
        answer = nli_server.server.submit(token, path)
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["id"])
    statuses = {pk: a["status"] for pk, a in nli_server.server.wait_scored(token, ids).items()}
    assert sorted(statuses.values()) == ["rejected", "rejected", "rejected", "scored", "scored"]
    big = nli_server.server.get(f"/api/submissions/{ids[1]}", token).json()
    assert "upload cap" in big["messages"][0]
    check = submit_cli(nli_server, "quinn", firsts[0], "--check")  # costs no quota
    assert check.returncode == 2 and "perhaps" in check.stderr
    sixth = submit_cli(nli_server, "quinn", nli_server.predictions(0.9, 0.9, 7))
    assert sixth.returncode == 2
    assert "quota" in sixth.stderr and "resets at" in sixth.stderr and "UTC" in sixth.stderr
    team = nli_server.server.get("/api/team", token).json()
    assert team["quota"]["used"]["nli"] == 5 and team["quota"]["resets_at"].endswith("+00:00")
    assert nli_server.site.query("SELECT COUNT(*) FROM leaderboard_submission s JOIN leaderboard_team t "
                                 "ON s.team_id = t.id WHERE t.name = %s", ("Quota team",)) == [(5,)]


def test_concurrent_attempts_keep_the_quota_exact(nli_server: Served) -> None:
    token = nli_server.tokens["cora"]
    path = nli_server.predictions(0.6, 0.6, 8)
    codes: list[int] = []
    barrier = threading.Barrier(10)

    def send() -> None:
        barrier.wait()
        codes.append(nli_server.server.submit(token, path).status_code)

    threads = [threading.Thread(target=send) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [201] * 5 + [429] * 5
    assert nli_server.site.query("SELECT COUNT(*) FROM leaderboard_submission s JOIN leaderboard_team t "
                                 "ON s.team_id = t.id WHERE t.name = %s", ("Concurrent team",)) == [(5,)]


def test_login_attempts_are_rate_limited(nli_server: Served) -> None:
    client = httpx.Client(base_url=nli_server.server.url, timeout=30, verify=tls())
    codes = []
    for _ in range(6):
        codes.append(client.post("/login", data={"username": "bob", "password": "wrong",
                                                 "csrfmiddlewaretoken": csrf_of(client, "/login")}).status_code)
    assert codes == [401] * 5 + [429]
    right = client.post("/login", data={"username": "bob", "password": PASSWORD,
                                        "csrfmiddlewaretoken": csrf_of(client, "/login")})
    assert right.status_code == 429  # even the right password waits out the window


def _texts_everywhere(served: Served, ids: list[int]) -> str:
    texts = []
    for path in ("/", "/api/leaderboard", "/tasks/nli", "/api/tasks/nli", "/status", "/api/status"):
        texts.append(served.server.get(path).text)
    for user in ("alice", "bob", "root"):
        texts.append(served.server.get("/api/team", served.tokens[user]).text)
        for pk in ids:
            texts.append(served.server.get(f"/api/submissions/{pk}", served.tokens[user]).text)
    alice = session(served, "alice")
    texts += [alice.get("/team").text] + [alice.get(f"/submissions/{pk}").text for pk in ids]
    texts.append(served.server.log())
    return "\n".join(texts)


def test_nothing_private_before_reveal_and_private_after(nli_server: Served, scored: dict[str, Any]) -> None:
    rows = nli_server.site.query("SELECT s.id, p.task_score FROM leaderboard_privatescore p JOIN leaderboard_score "
                                 "c ON p.score_id = c.id JOIN leaderboard_submission s ON c.submission_id = s.id")
    public = {pk for pk, _ in nli_server.site.query("SELECT submission_id, task_score FROM leaderboard_score")}
    ids = sorted(public)
    everything = _texts_everywhere(nli_server, ids)
    for _, value in rows:
        for shown in (f"{value:.2f}", repr(value)):  # as the pages and answers write numbers, not in a timestamp
            found = re.search(rf"(?<![\d.:]){re.escape(shown)}(?!\d)", everything)
            assert found is None, f"private {shown} before reveal: {everything[found.start() - 80:found.end()]}"
    assert "private" not in nli_server.server.get("/api/leaderboard").json()
    klue("leaderboard", "reveal", str(nli_server.site.root))
    board = nli_server.server.get("/api/leaderboard").json()
    assert board["revealed"] is True
    private_rows = board["private"]["tasks"]["nli"]
    private_values = {pk: value for pk, value in rows}
    assert {r["submission"]: r["score"] for r in private_rows}.items() <= private_values.items()
    assert any(f"{v:.2f}" in nli_server.server.get("/").text for v in private_values.values())
    # bob's private part was the better one (0.85 against alice's 0.45): the private ranking says so
    assert private_rows[0]["team"] == XSS
    answer = nli_server.server.get(f"/api/submissions/{scored['alice']['id']}", nli_server.tokens["alice"]).json()
    assert answer["private"]["task_score"] == pytest.approx(private_values[scored["alice"]["id"]])
