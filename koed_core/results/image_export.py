"""Charts written as images by Kaleido, in a child process with a deadline.

Kaleido drives a headless Chromium and joins the thread that talks to it without a
timeout: a clean-clone run of the suite saw `pio.write_images` wait forever, with nothing
on the CPU, while the export's tables were already written. Here the drawing runs in its
own process group, so a Chromium that never answers is ended with its children, tried
once more, and then said in one sentence instead of a command that never returns.
Plotly and Kaleido are still what draw the images; only the waiting is ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from koed_core.errors import KoedError

DEADLINE_S = 180.0
"""How long one try may take (a cold Chromium on a busy two-core machine: about 20 s)."""

_CHILD = """
import json, logging, sys
import plotly.io as pio
logging.getLogger("choreographer").setLevel(logging.CRITICAL)
job = json.load(open(sys.argv[1], encoding="utf-8"))
figs = [pio.from_json(f) for f in job["figs"]]
pio.write_images(figs, job["paths"], width=job["width"], height=job["height"])
"""


class ImageExportError(KoedError):
    """The chart images could not be drawn (the tables beside them are written)."""


def write_images(
    figs: list[Any], paths: list[Path], *, width: int, height: int, deadline_s: float = DEADLINE_S
) -> None:
    """Write each figure to its path (the format from the suffix), twice at most.

    Raises:
        ImageExportError: Kaleido failed, or did not finish within ``deadline_s``, twice.
    """
    job = {
        "figs": [fig.to_json() for fig in figs],
        "paths": [str(p) for p in paths],
        "width": width,
        "height": height,
    }
    with tempfile.TemporaryDirectory(prefix="koed-images-") as folder:
        spec = Path(folder) / "job.json"
        spec.write_text(json.dumps(job), encoding="utf-8")
        why = ""
        for _try in (1, 2):
            why = _draw(spec, deadline_s)
            if not why:
                return
    names = ", ".join(p.name for p in paths)
    raise ImageExportError(f"the chart images ({names}) could not be drawn: {why}")


def _draw(spec: Path, deadline_s: float) -> str:
    """One try: "" when every image was written, else why not."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(spec)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # Chromium and its helpers in the child's group
    )
    try:
        _out, err = child.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        _end_group(child)
        return f"Kaleido's Chromium gave no answer within {deadline_s:g} s"
    if child.returncode != 0:
        last = (err or b"").decode("utf-8", "replace").strip().splitlines()
        return last[-1][:300] if last else f"Kaleido exited with status {child.returncode}"
    return ""


def _end_group(child: subprocess.Popen[bytes]) -> None:
    """End the child and every process it started (Chromium's too)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
