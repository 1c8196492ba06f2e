"""The paper's published claims, as data (``data/paper/claims.toml``), checked against a
reproduction's runs: a reproduction that never compares itself with what the paper says
cannot say it reproduced it.

Each claim names a test. ``every_gap_below_zero``: for every model and metric, the paired
KoED-ED gap's 95% CI lies below 0. ``model_ranks_first``: one model's score in one
language beats every other model's on the same dialogues, each paired difference's CI
above 0. A claim is *undecided* when the runs cannot decide it (a CI across 0, a model
missing); it never borrows a number from another source. Every verdict names the runs
and the judge configuration its numbers come from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from koed_core.bootstrap import bootstrap_means
from koed_core.db import JudgeConfig, Runs
from koed_core.errors import KoedError
from koed_core.paths import DATA_DIR
from koed_core.results.gaps import MIN_PAIRS_FOR_CI, paired_gap
from koed_core.text import plain_text
from koed_core.tomlfile import read_toml

CLAIMS_FILE = DATA_DIR / "paper" / "claims.toml"
TESTS = ("every_gap_below_zero", "model_ranks_first", "gap_larger_on_subset")
ALPHA = 0.05
RULE = (
    "Decision rule: a claim holds when every one of its intervals is on its side of 0 (an "
    "intersection-union test: each at 95%, no adjustment needed); it does not hold when at "
    "least one interval contradicts it with a one-sided bootstrap p-value below 0.05 after "
    "Holm's adjustment over all of its intervals (family-wise error at most 5%: one "
    "interval on the wrong side of 0 by chance cannot flip a true claim); else undecided."
)
HOLDS, FAILS, UNDECIDED = "holds", "does not hold", "undecided"


class ClaimsError(KoedError, ValueError):
    """A claims file that cannot be read or names an unknown test."""


@dataclass(frozen=True)
class Claim:
    """One published claim and the test that decides it."""

    key: str
    text: str
    test: str
    params: Mapping[str, Any] = field(default_factory=dict)
    abstract: str = ""
    """The paper's own sentence the claim restates, quoted beside it."""


@dataclass(frozen=True)
class Verdict:
    """What the runs say about one claim, with the numbers and where they come from."""

    claim: Claim
    status: str
    numbers: tuple[str, ...]
    runs: tuple[str, ...]
    judge: str
    notes: tuple[str, ...] = ()


def load_claims(path: Path = CLAIMS_FILE) -> list[Claim]:
    """The claims of a file, in its order.

    Raises:
        ClaimsError: not TOML, no claims, a claim without text or with an unknown test.
    """
    raw = read_toml(path, "claims file", (), ClaimsError)
    table = raw.get("claims")
    if not isinstance(table, Mapping) or not table:
        raise ClaimsError(f"{path}: no [claims.NAME] tables")
    claims = []
    for key, body in table.items():
        if not isinstance(body, Mapping) or not isinstance(body.get("text"), str):
            raise ClaimsError(f"{path}: claims.{key} needs a text")
        if body.get("test") not in TESTS:
            raise ClaimsError(f"{path}: claims.{key}: test must be one of {', '.join(TESTS)}")
        params = {k: v for k, v in body.items() if k not in ("text", "test", "abstract")}
        _check_params(path, str(key), str(body["test"]), params)
        quoted = str(body.get("abstract", ""))
        claims.append(Claim(str(key), body["text"], str(body["test"]), params, quoted))
    return claims


def _check_params(path: Path, key: str, test: str, params: Mapping[str, Any]) -> None:
    """Each test's settings of the right kind, so a bad file is one sentence, not a
    traceback in the middle of a reproduction's report."""
    where = f"{path}: claims.{key}"
    if test in ("every_gap_below_zero", "gap_larger_on_subset"):
        metrics = params.get("metrics")
        if (
            not isinstance(metrics, list)
            or not metrics
            or not all(isinstance(m, str) for m in metrics)
        ):
            raise ClaimsError(f'{where}: metrics must be a list of names, e.g. ["EX", "CA"]')
        return
    for name in ("model", "metric"):
        if not isinstance(params.get(name), str) or not params[name]:
            raise ClaimsError(f"{where}: {name} must be a name (text)")
    if params.get("lang", "ko") not in ("ko", "en"):
        raise ClaimsError(f'{where}: lang must be "ko" or "en"')


def check(
    claims: Sequence[Claim],
    frame: pd.DataFrame,
    runs: Mapping[tuple[str, str], str],
    judge: JudgeConfig | None,
    notes: Mapping[str, str] | None = None,
    groups: Mapping[str, str] | None = None,
) -> list[Verdict]:
    """Each claim decided on ``frame`` (``gaps.score_frame`` under ``judge``) for the runs
    ``(model, protocol) -> run_id``; ``notes``: model -> what was substituted (a retired
    snapshot, full precision for 4-bit), said beside every verdict using that model;
    ``groups``: conv_id -> "jeong/han" or "other labels" (for ``gap_larger_on_subset``).
    Every test decides by ``RULE``."""
    judged = frame[frame["source"] == "judge"] if not frame.empty else frame
    said = judge.label if judge is not None else "no judge configuration"
    out = []
    for claim in claims:
        if judge is None or judged.empty:
            out.append(Verdict(claim, UNDECIDED, ("no judged runs",), (), said))
            continue
        if claim.test == "gap_larger_on_subset":
            status, numbers, used = _subset_gaps(claim, judged, runs, groups or {})
        else:
            test = _gaps_below_zero if claim.test == "every_gap_below_zero" else _ranks_first
            status, numbers, used = test(claim, judged, runs)
        models = sorted({m for (m, _p), r in runs.items() if r in used})
        extra = tuple(f"{m}: {notes[m]}" for m in models if notes and m in notes)
        out.append(Verdict(claim, status, numbers, tuple(sorted(used)), said, extra))
    return out


def provenance_notes(
    store: Any, runs: Mapping[tuple[str, str], str], specs: Mapping[str, Any]
) -> dict[str, str]:
    """model -> what ran in place of the paper's setup, read from the stored runs (never
    from the registry's ``substitutes``, which only say what *could* replace a model).

    A run whose stored model id is one of its entry's substitutes, or not the id the
    KoED authors ran (``differences.AUTHORS_DECODING``) for a paper model's family, is
    a substitution; an open model on a server is said to run its server's weights.
    """
    from koed_core.results.differences import ALIASES, AUTHORS_DECODING

    authored = {ALIASES.get(m, m) for m in AUTHORS_DECODING} | set(AUTHORS_DECODING)
    notes: dict[str, str] = {}
    for (name, _protocol), run_id in sorted(runs.items()):
        stored = Runs(store).run_config(run_id)
        if stored is None or name in notes:
            continue
        config, _spec = stored
        said = _what_ran(config, specs.get(name), authored)
        if said:
            notes[name] = said
    return notes


def _what_ran(config: Mapping[str, Any], spec: Any, authored: set[str]) -> str:
    """What one stored run ran in place of the paper's setup ('' when it is the paper's).

    Every family is checked, not Claude alone (issue 64 #1): an open model served under
    a server's own name (``--served-model-name``) is, as far as the record shows,
    another model, and is said so with the id the paper ran.
    """
    ran = str(config.get("model_id") or "")
    subs = tuple(getattr(spec, "substitutes", ()) or ())
    meant = str(getattr(spec, "model", "") or "")
    served = config.get("family") == "open" and config.get("backend") == "openai"
    weights = "weights as its server runs them (the paper: 4-bit bitsandbytes)"
    if ran in subs:
        return f"substituted: ran {ran} in place of the paper's retired model"
    if config.get("family") == "claude" and ran not in authored:
        return f"substituted: ran {ran}, not the paper's claude-3-5-sonnet-20240620"
    if ran not in authored:
        paper = meant if meant in authored and meant != ran else ""
        if not paper:
            return f"ran {ran}, which is not one of the paper's models"
        said = (
            f"ran {ran}, not the paper's {paper} (another model, unless its server only renamed it)"
        )
        return f"{said}; {weights}" if served else said
    return weights if served else ""


def _per_dialogue(judged: pd.DataFrame, run_id: str, metric: str) -> pd.DataFrame:
    mine = judged[(judged["run_id"] == run_id) & (judged["metric"] == metric)]
    return mine.pivot_table(index="conv_id", columns="lang", values="value", aggfunc="mean")


def _gaps_below_zero(
    claim: Claim, judged: pd.DataFrame, runs: Mapping[tuple[str, str], str]
) -> tuple[str, tuple[str, ...], set[str]]:
    metrics = list(claim.params.get("metrics", []))
    numbers: list[str] = []
    used: set[str] = set()
    below = crossing = 0
    against: list[float | None] = []
    for (model, protocol), run_id in sorted(runs.items()):
        for metric in metrics:
            wide = _per_dialogue(judged, run_id, metric)
            if not {"en", "ko"} <= set(wide.columns):
                continue
            both = wide.dropna(subset=["en", "ko"])
            if len(both) < 2:
                continue
            diffs = both["ko"].to_numpy() - both["en"].to_numpy()
            gap, low, high = paired_gap(np.zeros(len(diffs)), diffs)
            used.add(run_id)
            below += high is not None and high < 0
            crossing += low is not None and high is not None and low <= 0 <= high
            against.append(_p_above(diffs))
            numbers.append(f"{model} {protocol} {metric}: {gap:+.2f} [{low:+.2f}, {high:+.2f}]")
    if not numbers:
        return UNDECIDED, ("no run has both languages judged",), used
    said = _decide(below, against, numbers, "gaps lie below 0", "gaps lie above 0", crossing)
    return (*said, used)


def _ranks_first(
    claim: Claim, judged: pd.DataFrame, runs: Mapping[tuple[str, str], str]
) -> tuple[str, tuple[str, ...], set[str]]:
    target = str(claim.params.get("model", ""))
    metric, lang = str(claim.params.get("metric", "")), str(claim.params.get("lang", "ko"))
    numbers: list[str] = []
    used: set[str] = set()
    verdicts = []
    against: list[float | None] = []
    for protocol in sorted({p for _m, p in runs}):
        mine = runs.get((target, protocol))
        others = {m: r for (m, p), r in runs.items() if p == protocol and m != target}
        if mine is None or not others:
            continue
        ours = _per_dialogue(judged, mine, metric).get(lang)
        if ours is None:
            continue
        for model, run_id in sorted(others.items()):
            theirs = _per_dialogue(judged, run_id, metric).get(lang)
            if theirs is None:
                continue
            both = pd.concat([ours, theirs], axis=1, keys=["ours", "theirs"]).dropna()
            if len(both) < 2:
                continue
            diff, low, high = paired_gap(both["theirs"].to_numpy(), both["ours"].to_numpy())
            used |= {mine, run_id}
            verdicts.append((low, high))
            against.append(_p_above((both["theirs"] - both["ours"]).to_numpy()))
            numbers.append(
                f"{target} - {model} ({protocol}, {metric}, {lang}): {diff:+.2f} "
                f"[{low:+.2f}, {high:+.2f}]"
            )
    if not verdicts:
        return UNDECIDED, (f"{target} and another model are not both in these runs",), used
    above = sum(low is not None and low > 0 for low, _high in verdicts)
    crossing = sum(lo is not None and hi is not None and lo <= 0 <= hi for lo, hi in verdicts)
    said = _decide(
        above, against, numbers, "paired CIs above 0", "other models score higher", crossing
    )
    return (*said, used)


def _p_above(diffs: np.ndarray) -> float | None:
    """One-sided bootstrap p-value against "the mean is above 0" being chance: the share
    of resampled means at or below 0 (None with too few pairs)."""
    if len(diffs) < MIN_PAIRS_FOR_CI:
        return None
    return float((bootstrap_means(diffs) <= 0).mean())


def _decide(
    agree: int,
    against: Sequence[float | None],
    numbers: Sequence[str],
    yes: str,
    no: str,
    crossing: int | None = None,
) -> tuple[str, tuple[str, ...]]:
    """``RULE``: holds when all ``numbers`` agree (every CI on the claim's side of 0); does
    not hold when a contradicting p-value survives Holm's adjustment over all of them.

    ``crossing``: how many of the intervals include 0; an undecided verdict says those
    apart from the ones on the other side of 0 (issue 64 #4: "1 of 50 CIs include 0"
    was said of [+0.09, +0.51])."""
    from statsmodels.stats.multitest import multipletests

    total = len(numbers)
    if agree == total:
        return HOLDS, (f"all {total} {yes}", *numbers)
    tested = [p for p in against if p is not None]
    if tested:
        rejected = multipletests(np.asarray(tested), alpha=ALPHA, method="holm")[0]
        if rejected.any():
            return FAILS, (f"{int(rejected.sum())} of {total}: {no} (Holm, 5%)", *numbers)
    if crossing is None:
        return UNDECIDED, (f"{total - agree} of {total} CIs are not on the claim's side of 0",
                           *numbers)  # fmt: skip
    other = total - agree - crossing
    said = [f"{crossing} of {total} CIs include 0"] if crossing else []
    if other:
        said.append(
            f"{other} of {total} lie on the other side of 0, none surviving Holm's adjustment (5%)"
        )
    return UNDECIDED, ("; ".join(said), *numbers)


def _subset_gaps(
    claim: Claim,
    judged: pd.DataFrame,
    runs: Mapping[tuple[str, str], str],
    groups: Mapping[str, str],
) -> tuple[str, tuple[str, ...], set[str]]:
    """The gap on the subset's dialogues (jeong/han) minus the gap on the others, per run
    and metric: the two groups resampled apart (different dialogues), a 95% CI below 0
    where the subset's gap is the wider."""
    subset = str(claim.params.get("subset", "jeong/han"))
    numbers: list[str] = []
    used: set[str] = set()
    below = crossing = 0
    against: list[float | None] = []
    for (model, protocol), run_id in sorted(runs.items()):
        for metric in claim.params.get("metrics", []):
            wide = _per_dialogue(judged, run_id, str(metric))
            if not {"en", "ko"} <= set(wide.columns):
                continue
            gap = (wide["ko"] - wide["en"]).dropna()
            inside = gap[gap.index.map(lambda c: groups.get(str(c)) == subset)].to_numpy()
            outside = gap[gap.index.map(lambda c: groups.get(str(c)) != subset)].to_numpy()
            if len(inside) < MIN_PAIRS_FOR_CI or len(outside) < MIN_PAIRS_FOR_CI:
                continue
            draws = bootstrap_means(inside, 1) - bootstrap_means(outside, 2)
            low, high = np.percentile(draws, [2.5, 97.5])
            diff = float(inside.mean() - outside.mean())
            used.add(run_id)
            below += high < 0
            crossing += low <= 0 <= high
            against.append(float((draws <= 0).mean()))
            numbers.append(
                f"{model} {protocol} {metric}: {subset} gap minus the others' {diff:+.2f} "
                f"[{low:+.2f}, {high:+.2f}]"
            )
    if not numbers:
        return UNDECIDED, (f"no run has {subset} and other dialogues judged in both",), used
    yes, no = f"{subset} gaps wider", f"{subset} gaps narrower"
    return (*_decide(below, against, numbers, yes, no, int(crossing)), used)


def to_markdown(verdicts: Sequence[Verdict], dataset_sha256: str = "") -> str:
    """The verdicts as a Markdown section, each with its numbers and sources (the runs,
    the judge configuration and, given, the dataset they were run on). Every text from a
    file or a run (a claim, a model id, a run label) is one line, markup escaped, so it
    can neither start a bullet of its own nor be read as markup."""
    md = plain_text.markdown
    lines = ["## The paper's claims", ""]
    if dataset_sha256:
        lines += [f"Dataset sha256: {md(dataset_sha256)}", ""]
    for v in verdicts:
        lines.append(f"- **{md(v.claim.text)}** {md(v.status.upper())}.")
        if v.claim.abstract:
            lines.append(f"  - the abstract: \u201c{md(v.claim.abstract)}\u201d")
        lines += [f"  - {md(n)}" for n in v.numbers]
        runs = ", ".join(md(r) for r in v.runs) or "none"
        lines.append(f"  - judge: {md(v.judge)}; runs: {runs}")
        lines += [f"  - what ran: {md(n)}" for n in v.notes]
    if verdicts:
        lines += ["", md(RULE)]
    return "\n".join(lines) + "\n"
