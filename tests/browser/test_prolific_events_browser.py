"""Issue 68, item 7: a return delivered by Prolific as a signed event frees the place for
the next person within 5 s, with no sync in between. The app (`streamlit run`), the event
receiver (`koed prolific receive`, its own process as under `koed serve`) and the planted
Prolific, which signs and delivers the event to the subscribed address (its https target
mapped to the receiver: Caddy's part)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import seeded_store, study
from fixtures.serve import free_port
from koed_core.db.crowd import Crowd
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_hooks
from koed_core.rating.crowd.prolific_client import ProlificClient
from tests.browser.conftest import ARTIFACTS, ROOT, serve

TOKEN = "browser-token"
WORKSPACE = "ab" * 12
TARGET = "https://koed.example/prolific/hooks"


def _receiver(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """`koed prolific receive` on a free port, once its health endpoint answers."""
    port = free_port()
    log = (tmp_path / "receiver.log").open("w")
    proc = subprocess.Popen(  # noqa: S603 - our interpreter, our command
        [
            sys.executable,
            "-m",
            "koed_core.cli",
            "prolific",
            "receive",
            "--port",
            str(port),
            "--db",
            str(tmp_path / "koed.db"),
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    health = f"http://127.0.0.1:{port}/prolific/hooks/health"
    for _ in range(200):  # up to 20 s for the interpreter to start
        try:
            with urllib.request.urlopen(health, timeout=0.1):  # noqa: S310 - loopback
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((tmp_path / "receiver.log").read_text()) from None
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)  # died meanwhile: said above on the next turn
    return proc, f"http://127.0.0.1:{port}{prolific_hooks.HOOK_PATH}"


def test_a_return_delivered_as_a_signed_event_frees_the_place_within_5_s(
    tmp_path: Path, browser: Any
) -> None:
    from playwright.sync_api import expect

    key = "s" * 40
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=0, langs=("ko",))
    invite, token = crowd.create_invite(
        store,
        key.encode(),
        study_id,
        crowd.InviteRequest(
            platform="prolific",
            days=7,
            cap=1,
            batch_size=2,
            reward=2.0,
            consent_ko="연구 참여에 동의합니다.",
            consent_en="I agree to take part.",
            contact="researcher@example.org",
        ),
    )
    fake = FakeProlific(token=TOKEN).start()
    env = {
        "PROLIFIC_API_TOKEN": TOKEN,
        "PROLIFIC_API_URL": fake.base_url,
        "PROLIFIC_WORKSPACE_ID": WORKSPACE,
    }
    client = ProlificClient.from_env(env, store, sleep=lambda _s: None)
    prolific.publish(store, client, invite, key.encode(), "https://koed.example", go_live=True)
    invite = crowd.Invite.from_row(Crowd(store).invite(invite.id) or {})
    receiver, hook_url = _receiver(tmp_path, env)
    fake.hook_targets[TARGET] = hook_url
    prolific_hooks.subscribe(client, TARGET)
    server = serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE), "KOED_SECRET_KEY": key})
    url = next(server)
    try:
        first, second = (
            fake.arrive(str(invite.prolific_study_id)),
            fake.arrive(str(invite.prolific_study_id)),
        )

        def link(sub: dict[str, str]) -> str:
            return (
                f"{url}/join?invite={token}&PROLIFIC_PID={sub['participant_id']}"
                f"&STUDY_ID={invite.prolific_study_id}&SESSION_ID={sub['id']}&lang=en"
            )

        holder = browser.new_page(viewport={"width": 1366, "height": 768})
        holder.goto(link(first))
        expect(holder.get_by_text("I have read this and agree")).to_be_visible()
        waiting = browser.new_page(viewport={"width": 1366, "height": 768})
        waiting.goto(link(second))
        expect(waiting.get_by_text("all 1 places are taken")).to_be_visible()
        syncs = [r for r in fake.requests if r[1].endswith("/submissions/")]
        fake.give_back(first["id"])  # Prolific frees the place and tells the receiver
        assert fake.deliveries[-1][1] == 200
        waiting.reload()  # the next person opens the link again
        expect(waiting.get_by_text("I have read this and agree")).to_be_visible(timeout=5_000)
        assert waiting.get_by_text("places are taken").count() == 0
        assert [r for r in fake.requests if r[1].endswith("/submissions/")] == syncs  # no sync
        waiting.screenshot(path=str(ARTIFACTS / "prolific_event_place_freed.png"))
        holder.reload()
        expect(holder.get_by_text("You returned this study on Prolific")).to_be_visible()
    finally:
        server.close()
        receiver.terminate()
        receiver.wait(timeout=20)
        fake.stop()
