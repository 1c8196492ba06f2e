"""The gap split into perception and response: how far a rubric gap follows from the model
naming the wrong emotion, and how far it stays when the emotion was recognised.

For one judge configuration, per run and rubric dimension:

- per language, the mean score on the items whose emotion answer named a gold label
  (*recognised*: a hit for ``single``, an F1 above 0 for ``multi``) and on the others
  (*missed*), and recognised minus missed with a bootstrap 95% CI (the two groups are
  different dialogues, resampled apart): what perceiving the emotion is worth in the
  reply's score;
- the same again per gold emotion label (``emotion``; ``all`` is every dialogue), since a
  gap may be mis-perception for some emotions and reply style for others;
- the KoED-ED gap paired by dialogue over every dialogue (``all``), over the dialogues
  recognised in both languages (``both recognised``: the *response* gap, perception held
  right on both sides) and over those recognised in English only (``missed in Korean``),
  each with its bootstrap 95% CI over dialogues;
- ``all`` minus ``both recognised`` (the part of the gap that comes with mis-perception)
  as a row of its own: both terms from the same resampled dialogues, so its interval
  is that of the difference, not of two dialogue sets compared apart (issue 64 #2);
- per language, the replies written in the other language (a Korean dialogue answered
  in English: ``koed_core.models.speaker.other_language``), counted and scored apart and
  left out of recognised, missed and both recognised: a reply in the wrong language is
  not a perception result.

A run that asked for no emotion (protocol ``direct``) has nothing recognised or missed:
it gets one row per dimension saying so (``note``), never a "missed" of every dialogue.

Every row names its run and judge configuration; nothing is averaged across sources.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from koed_core import bootstrap, i18n
from koed_core.bootstrap import bootstrap_means
from koed_core.db import JudgeConfig, Runs, Store
from koed_core.db.emotion_queries import gold_labels
from koed_core.i18n import N_, _
from koed_core.judge.rubric import codes
from koed_core.models.speaker import other_language
from koed_core.results import gaps

COLUMNS = [
    "run_id",
    "model",
    "protocol",
    "metric",
    "emotion",
    "part",
    "lang",
    "n",
    "value",
    "ci_low",
    "ci_high",
    "note",
    *JudgeConfig("", "", "", "").as_columns(),
]
"""``part``: recognised, missed, recognised minus missed, reply in the other language
(per ``lang``), or the gap over all, both recognised, missed in Korean, all minus both
recognised (``lang`` "ko-en", ``n`` dialogues); ``not split`` for a run that asked for no
emotion. ``note``: why a value or its interval is missing, in the reader's language."""


def perception_table(
    store: Store, judge: JudgeConfig | None, by_emotion: bool = True
) -> pd.DataFrame:
    """The perception/response split of every batch run this judge configuration scored,
    over every dialogue and (``by_emotion``) per gold emotion label; empty, with its
    columns, when there is nothing to split."""
    if judge is None:
        return pd.DataFrame(columns=COLUMNS)
    frame = gaps.score_frame(store, judge=judge)
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    emotion = frame[frame["metric"] == gaps.EMOTION_METRIC]
    seen = emotion.set_index(["run_id", "conv_id", "lang"])["value"] > 0
    asked = set(emotion["run_id"])  # the runs that named an emotion before replying
    judged = frame[(frame["source"] == "judge") & frame["metric"].isin(codes())]
    away = _other_language_replies(store, sorted(set(judged["run_id"])))
    gold = gold_labels(store) if by_emotion else {}
    rows: list[dict[str, object]] = []
    for (run_id, metric), part in judged.groupby(["run_id", "metric"], sort=True):
        meta = {
            "run_id": run_id,
            "model": part["model"].iloc[0],
            "protocol": part["protocol"].iloc[0],
            "metric": metric,
            **judge.as_columns(),
        }
        if run_id not in asked:
            rows.append(_not_split(part, meta))
            continue
        keys = list(zip(part["run_id"], part["conv_id"], part["lang"], strict=True))
        part = part.assign(
            recognised=[bool(seen.get(k, False)) for k in keys], other=[k in away for k in keys]
        )
        part = part[["conv_id", "lang", "value", "recognised", "other"]].astype(
            {"conv_id": object, "lang": object}
        )
        wide = _paired(part)  # once a run and dimension; each label takes its rows
        rows += _split(part, wide, {**meta, "emotion": ALL})
        if by_emotion:
            for label, convs in _by_label(gold, part["conv_id"]).items():
                mine = part[part["conv_id"].isin(convs)]
                rows += _split(mine, _rows_of(wide, mine), {**meta, "emotion": label})
    return pd.DataFrame(rows, columns=COLUMNS)


def _other_language_replies(store: Store, run_ids: list[str]) -> set[tuple[str, str, str]]:
    """(run_id, conv_id, lang) of the replies written in the other language."""
    found = set()
    for reply in Runs(store).answered(run_ids):
        if other_language(str(reply["text"]), str(reply["lang"])):
            found.add((str(reply["run_id"]), str(reply["conv_id"]), str(reply["lang"])))
    return found


def _not_split(part: pd.DataFrame, meta: dict[str, object]) -> dict[str, object]:
    """The one row of a run that named no emotion: nothing to split, and why."""
    return {
        **meta,
        "emotion": ALL,
        "part": "not split",
        "lang": "ko-en",
        "n": int(part["conv_id"].nunique()),
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "note": _(NOT_SPLIT, protocol=meta["protocol"]),
    }


NOT_SPLIT = N_(
    "undefined: this run asked for no emotion (protocol {protocol}), so no reply "
    "is recognised or missed"
)


def reader_notes(table: pd.DataFrame) -> pd.Series:
    """The ``note`` column of a :func:`perception_table` made in English, in the reader's
    language: a page keeps the table for every reader and translates where it draws."""
    with i18n.speaking("en"):
        english = {_(NOT_SPLIT, protocol=p): p for p in set(table["protocol"].dropna())}
    return pd.Series(
        [
            (_(NOT_SPLIT, protocol=english[n]) if n in english else _(n))
            if isinstance(n, str) and n
            else n
            for n in table["note"]
        ],
        index=table.index,
        dtype=object,
    )


ALL = "all"
"""The ``emotion`` of the rows over every dialogue."""


def _split(
    part: pd.DataFrame, wide: pd.DataFrame | None, meta: dict[str, object]
) -> list[dict[str, object]]:
    return _per_language(part, meta) + _gaps(wide, meta)


def _paired(part: pd.DataFrame) -> pd.DataFrame | None:
    """Per dialogue answered in both languages (in conv_id order): the mean score in each
    (``en``, ``ko``), whether each recognised the emotion in a reply of its own language
    (``seen_en``, ``seen_ko``) and whether either reply is in the other language;
    None when one language is missing. Made once a run and dimension: a pivot for each
    of 34 labels took seconds a page."""
    grouped = part.groupby(["conv_id", "lang"], sort=True).agg(
        value=("value", "mean"), recognised=("recognised", "max"), other=("other", "max")
    )
    value = grouped["value"].unstack("lang")
    if not {"en", "ko"} <= set(value.columns):
        return None
    both = value.dropna(subset=["en", "ko"])

    def flags(column: str) -> pd.DataFrame:
        wide = grouped[column].unstack("lang").reindex(both.index)
        return wide.astype("boolean").fillna(False).astype(bool)

    seen, other = flags("recognised"), flags("other")
    return pd.DataFrame(
        {
            "en": both["en"],
            "ko": both["ko"],
            "seen_en": seen["en"] & ~other["en"],  # a wrong-language reply is not "seen"
            "seen_ko": seen["ko"] & ~other["ko"],
            "other": other["en"] | other["ko"],
        }
    )


def _rows_of(wide: pd.DataFrame | None, mine: pd.DataFrame) -> pd.DataFrame | None:
    """``wide``'s dialogues among ``mine``; None, as :func:`_paired` says, when ``mine``
    lacks a language."""
    if wide is None or not {"en", "ko"} <= set(mine["lang"]):
        return None
    return wide[wide.index.isin(set(mine["conv_id"]))]


def _by_label(gold: dict[str, list[str]], conv_ids: pd.Series) -> dict[str, set[str]]:
    """Gold label -> the dialogues (of these) that carry it."""
    found: dict[str, set[str]] = {}
    for conv_id in set(conv_ids):
        for label in gold.get(conv_id, []):
            found.setdefault(label, set()).add(conv_id)
    return dict(sorted(found.items()))


def _per_language(part: pd.DataFrame, meta: dict[str, object]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    langs = part["lang"].to_numpy(dtype=object)  # arrays, not frames: 34 labels a run
    seen = part["recognised"].to_numpy(dtype=bool)
    away = part["other"].to_numpy(dtype=bool)
    values = part["value"].to_numpy(dtype=float)
    for lang in sorted(set(langs)):
        mine = (langs == lang) & ~away
        hit, miss = values[mine & seen], values[mine & ~seen]
        for name, chosen in (("recognised", hit), ("missed", miss)):
            rows.append({**meta, "part": name, "lang": lang, "n": len(chosen), **_mean(chosen)})
        rows.append(
            {
                **meta,
                "part": "recognised minus missed",
                "lang": lang,
                "n": len(hit) + len(miss),
                **_difference(hit, miss),
            }
        )
        other = values[(langs == lang) & away]
        rows.append(
            {**meta, "part": "reply in the other language", "lang": lang, "n": len(other),
             **_mean(other)}
        )  # fmt: skip
    return rows


def _gaps(wide: pd.DataFrame | None, meta: dict[str, object]) -> list[dict[str, object]]:
    if wide is None:
        return []
    rows = []
    both = wide["seen_en"] & wide["seen_ko"]
    for name, keep in (
        ("gap: all", pd.Series(True, index=wide.index)),
        ("gap: both recognised", both),
        ("gap: missed in Korean", wide["seen_en"] & ~wide["seen_ko"] & ~wide["other"]),
    ):
        chosen = wide[keep]
        diffs = (chosen["ko"] - chosen["en"]).to_numpy(dtype=float)
        rows.append({**meta, "part": name, "lang": "ko-en", "n": len(diffs), **_mean(diffs)})
    diffs = (wide["ko"] - wide["en"]).to_numpy(dtype=float)
    rows.append(
        {
            **meta,
            "part": "gap: all minus both recognised",
            "lang": "ko-en",
            "n": len(diffs),
            **_all_minus_part(diffs, both.to_numpy(dtype=bool)),
        }
    )
    return rows


def _mean(values: np.ndarray) -> dict[str, object]:
    """Mean with a bootstrap 95% CI over its items (None without two of them, and why)."""
    if not len(values):
        return {"value": None, "ci_low": None, "ci_high": None, "note": _("undefined: no item")}
    mean, low, high = gaps.paired_gap(np.zeros(len(values)), values)
    note = "" if low is not None else _("no interval: one item")
    return {"value": mean, "ci_low": low, "ci_high": high, "note": note}


def _difference(hit: np.ndarray, miss: np.ndarray) -> dict[str, object]:
    """Recognised minus missed, the two groups resampled apart."""
    if len(hit) < gaps.MIN_PAIRS_FOR_CI or len(miss) < gaps.MIN_PAIRS_FOR_CI:
        value = float(hit.mean() - miss.mean()) if len(hit) and len(miss) else None
        note = (
            _("no interval: fewer than 2 items on a side")
            if value is not None
            else _("undefined: nothing recognised or nothing missed")
        )
        return {"value": value, "ci_low": None, "ci_high": None, "note": note}
    draws = bootstrap_means(hit, 1) - bootstrap_means(miss, 2)
    low, high = np.percentile(draws, [2.5, 97.5])
    value = float(hit.mean() - miss.mean())
    return {"value": value, "ci_low": float(low), "ci_high": float(high), "note": ""}


def _all_minus_part(diffs: np.ndarray, inside: np.ndarray) -> dict[str, object]:
    """The mean of ``diffs`` minus their mean where ``inside``, and a 95% CI from
    resampling the dialogues once for both terms (``koed_core.bootstrap``'s counts): the
    two means share their dialogues, so they are never resampled apart. A resample
    with no dialogue inside has no value and is left out of the percentiles."""
    if int(inside.sum()) == 0:
        return {"value": None, "ci_low": None, "ci_high": None,
                "note": _("undefined: no dialogue recognised in both languages")}  # fmt: skip
    value = float(diffs.mean() - diffs[inside].mean())
    if len(diffs) < gaps.MIN_PAIRS_FOR_CI:
        return {"value": value, "ci_low": None, "ci_high": None,
                "note": _("no interval: one item")}  # fmt: skip
    counts = bootstrap.resample_counts(len(diffs))
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = counts @ diffs / len(diffs) - (counts @ (diffs * inside)) / (counts @ inside)
    interval = bootstrap.percentile_interval(draws)
    low, high = interval if interval is not None else (None, None)
    return {"value": value, "ci_low": low, "ci_high": high, "note": ""}
