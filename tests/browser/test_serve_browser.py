"""A crowd worker through `koed serve --processes 2` (issue 53): the app process serving them
is killed mid-item, and the visit goes on from the database where it stood, every rating
stored once; a rater's login survives the process that served it."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from fixtures.rating import seeded_store, study
from koed_core.cli.serving import free_ports
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, COOKIE_KEY, RATER_PASSWORD
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _app_pids(run_dir: Path) -> dict[int, int]:
    """Each app process's port -> its pid, from the configuration and supervisorctl."""
    conf = run_dir / "supervisord.conf"
    ports = [int(p) for p in re.findall(r"--server\.port=(\d+)", conf.read_text())]
    status = subprocess.run(
        [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status"],
        capture_output=True,
        text=True,
    ).stdout
    pids = {}
    for index, port in enumerate(ports):
        found = re.search(rf"^app-{index}\s+RUNNING\s+pid (\d+)", status, re.M)
        assert found, status
        pids[port] = int(found.group(1))
    return pids


def _caddy_route(dial: str) -> str:
    """The value of Caddy's cookie for an upstream: HMAC-SHA256 of its address under the
    policy's secret (none here)."""
    return hmac.new(b"", dial.encode(), hashlib.sha256).hexdigest()


def test_a_crowd_worker_finishes_after_the_process_serving_them_is_killed(
    tmp_path: Path, browser: Any
) -> None:
    from playwright.sync_api import expect

    from koed_core.rating import crowd

    key = "s" * 40
    db = tmp_path / "koed.db"
    store, run_id = seeded_store(db)
    _, study_id = study(store, run_id, overlap=3, attention_checks=0)
    consent = {
        "consent_ko": "연구 참여에 동의합니다.",
        "consent_en": "I agree to take part.",
        "contact": "researcher@example.org",
    }
    invite, token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(
            platform="prolific", days=7, cap=5, batch_size=4, reward=1.0, **consent
        ),
    )
    store.db.conn.close()
    users.add_user(tmp_path / "accounts.yaml", "mina", "rater", "Mina", RATER_PASSWORD)
    port = free_ports(1)[0]
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_SECRET_KEY": key,
        "KOED_USERS": str(tmp_path / "accounts.yaml"),
        "KOED_COOKIE_KEY": COOKIE_KEY,  # one key signs logins for every process
    }
    serve = subprocess.Popen(
        [sys.executable, "-m", "koed_core.cli", "serve", "--processes", "2", "--port", str(port),
         "--db", str(db), "--run-dir", str(run_dir), "--backup-every", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(serve.stdout or []), daemon=True).start()
    try:
        wait_until(
            lambda: serve.poll() is not None or any(line.startswith("ready:") for line in lines),
            "koed serve saying it is ready",
            timeout=120,
        )
        assert serve.poll() is None, "".join(lines)
        url = f"http://127.0.0.1:{port}"
        pid = "5f1a2b3c4d5e6f7a8b9c0d1e"
        link = f"/join?invite={token}&PROLIFIC_PID={pid}&STUDY_ID={'60' * 12}"
        link += f"&SESSION_ID={'70' * 12}&lang=en"
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        page = context.new_page()
        page.goto(url + link)
        expect(page.get_by_role("heading", name="KoED rating study")).to_be_visible()
        steps.agree(page, "I have read this and agree")
        page.get_by_test_id("stRadio").get_by_text("한국어", exact=True).click()
        page.get_by_label("Years lived in Korea").fill("25")
        page.get_by_role("button", name="Continue").click()
        for n, score in ((1, "4"), (2, "2")):
            expect(page.get_by_text(f"Calibration {n} of 2")).to_be_visible()
            steps.score_all(page, score)
            page.get_by_role("button", name="Submit rating").click()
            page.get_by_role("button", name="Next").click()
        expect(page.get_by_text("Batch 1 of 1: 0 of 4 rated")).to_be_visible()
        steps.score_all(page, "4")
        page.get_by_role("button", name="Submit rating").click()
        expect(page.get_by_text("Batch 1 of 1: 1 of 4 rated")).to_be_visible()
        shown_before = page.get_by_test_id("stMarkdown").all_inner_texts()

        # mid-item: the process this browser is kept on (Caddy's cookie names it) dies
        route = next(c["value"] for c in context.cookies() if c["name"] == "koed_route")
        pids = _app_pids(run_dir)
        serving = next(p for p in pids if _caddy_route(f"127.0.0.1:{p}") == route)
        os.kill(pids[serving], signal.SIGKILL)
        wait_until(lambda: _gone(pids[serving]), "the killed app process is gone", timeout=30)
        page.screenshot(path=str(ARTIFACTS / "serve_after_kill.png"))
        # the page reconnects (to the other process, or the restarted one) and the visit
        # goes on where it stood: the same item, 1 of 4 rated
        expect(page.get_by_text("Batch 1 of 1: 1 of 4 rated")).to_be_visible(timeout=60_000)
        steps.later(page, 3)  # settled, and still so seconds later
        expect(page.get_by_text("Batch 1 of 1: 1 of 4 rated")).to_be_visible()
        shown_after = page.get_by_test_id("stMarkdown").all_inner_texts()
        assert set(shown_before) & set(shown_after)  # the item they were rating
        for n in (1, 2, 3):
            expect(page.get_by_text(f"Batch 1 of 1: {n} of 4 rated")).to_be_visible()
            steps.score_all(page, "4")
            page.get_by_role("button", name="Submit rating").click()
        expect(page.get_by_text(invite.completion_code)).to_be_visible(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "serve_done.png"))
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "select r.item_id, r.dimension, count(*) from ratings r "
                "join study_items i on i.id = r.item_id where r.study_id = ? "
                "and i.kind = 'response' group by r.item_id, r.dimension",
                [study_id],
            ).fetchall()
        assert len({item for item, _, _ in rows}) == 4  # four items, each rated
        assert all(count == 1 for _, _, count in rows)  # once
        assert len(rows) == 20

        # a rater's login survives the process that served it: the cookie is signed with
        # the shared key, and another process (or the restarted one) reads it
        rater_context = browser.new_context(viewport={"width": 1366, "height": 768})
        rater_page = rater_context.new_page()
        rater_page.goto(url + "/login")
        steps.log_in_settled(rater_page, "mina", RATER_PASSWORD, "Logged in as Mina")
        route = next(c["value"] for c in rater_context.cookies() if c["name"] == "koed_route")
        pids = _app_pids(run_dir)
        killed = pids[next(p for p in pids if _caddy_route(f"127.0.0.1:{p}") == route)]
        os.kill(killed, 9)
        wait_until(lambda: _gone(killed), "the killed app process is gone", timeout=30)
        rater_page.goto(url + "/login")  # a full load: a new session, on whichever process
        expect(rater_page.get_by_text("Logged in as Mina")).to_be_visible(timeout=60_000)
        steps.later(rater_page, 3)
        expect(rater_page.get_by_text("Logged in as Mina")).to_be_visible()
        rater_page.screenshot(path=str(ARTIFACTS / "serve_login_survives.png"))
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)


def _gone(pid: int) -> bool:
    """The process ended (gone, or a zombie not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
