"""What running in the background costs: a job's wall time over the same run in the
foreground.

The fake OpenAI-compatible server runs in its own process at a fixed latency. The
foreground figure is ``koed run`` as a terminal would start it (process start included);
the background figure is from queueing the job (as the Runs page does, which also starts
the worker process) to the job's row saying "finished". Both store the same 68 answers
(34 sample dialogues x 2 languages, paper prompts: 136 requests) into fresh databases.

    python bench/jobs.py [--smoke]

``--smoke``: the first 8 dialogues (16 answers) at 20 ms a request, in seconds; the test
suite runs it to see the bench still works, and its figures are not the benchmark's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._fake_server import fake_openai  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.db.jobs import Jobs  # noqa: E402
from koed_core.jobs.kinds import enqueue  # noqa: E402
from koed_core.jobs.worker import ensure_worker  # noqa: E402
from koed_core.models.request import RunRequest  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

LATENCY_S = 0.5
CONCURRENCY = 4
DIALOGUES = 34  # the whole sample


def main() -> None:
    global LATENCY_S, DIALOGUES
    if "--smoke" in sys.argv[1:]:
        LATENCY_S, DIALOGUES = 0.02, 8
        print("# smoke: a small size; the figures are not the benchmark's")
    with fake_openai(LATENCY_S) as base_url, tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "OPENAI_BASE_URL": base_url, "KOED_CACHE_DIR": work}
        os.environ.update(env)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "koed_core.cli", "run", "--model", "openai:fake",
             "--data", str(SAMPLE_FILE), "--concurrency", str(CONCURRENCY),
             "--limit", str(DIALOGUES), "--db", str(Path(work) / "foreground.db")],
            env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        foreground = time.perf_counter() - start

        store = Store(Path(work) / "background.db")
        start = time.perf_counter()
        job_id = enqueue(
            store,
            RunRequest(
                model="openai:fake",
                data=str(SAMPLE_FILE),
                concurrency=CONCURRENCY,
                limit=DIALOGUES,
            ),
            "bench",
        )
        ensure_worker(store, cwd=ROOT)
        jobs = Jobs(store)
        started = None
        while jobs.get(job_id).active:
            if started is None and jobs.get(job_id).state == "running":
                started = time.perf_counter() - start
            time.sleep(0.02)
        background = time.perf_counter() - start
        job = jobs.get(job_id)
        answers = 2 * DIALOGUES  # Korean and English
        assert job.state == "finished" and job.done == answers, (job.state, job.reason)
        assert Store(Path(work) / "foreground.db").count("responses") == answers
        for worker in jobs.live_workers():
            os.kill(worker["pid"], 15)
    print(f"answers: {job.done}")
    print(f"foreground_s: {foreground:.2f}")
    print(f"background_s: {background:.2f}")
    print(f"queued_to_running_s: {started or 0:.2f}")
    print(f"overhead_ratio: {background / foreground:.3f}")


if __name__ == "__main__":
    main()
