"""Agreement between annotators: kappa on the category, F1 on the spans.

The category: Cohen's kappa (scikit-learn) when the same two people annotated every
dialogue, Fleiss' kappa (statsmodels) otherwise, each with a bootstrap 95% CI over
dialogues. Jeong/han dialogues are left out: the file decides their category.
The spans: F1 between each pair of annotators of a dialogue, per signal type and over
all types, counted two ways: *exact* (same turn, offsets and type) and *overlapping*
(same turn and type, the texts overlap; each span matched at most once). F1 over a pair
is 2 x matched / (spans of one + spans of the other), pooled over pairs. Notes and
details are in the language being spoken (a page's; English for the CLI and exports).

Where the annotators agree on the words but not on the type, the per-type F1 counts a
miss on both types. Two more readings show it, for refining a taxonomy: a *location-only*
F1 (the same counts with the type ignored) and a *confusion table of types* over the
spans whose texts overlap (each pair of spans matched once, same type first), with the
spans nobody else marked in a "(no span)" row and column.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from koed_core.annotation.projects import ANNOTATOR, Annotation
from koed_core.annotation.spans import Span
from koed_core.annotation.taxonomy import HANDCRAFTED
from koed_core.bootstrap import percentile_interval, resample_indices
from koed_core.i18n import _

ALL_TYPES = "all types"
CATEGORY_COLUMNS = [
    "method",
    "kappa",
    "ci_low",
    "ci_high",
    "dialogues",
    "annotators",
    "observed_agreement",
    "note",
]
SPAN_COLUMNS = ["type", "exact_f1", "overlap_f1", "spans", "pairs"]
NO_SPAN = "(no span)"
"""The confusion table's row and column for a span the other annotator did not mark."""


def _by_item(annotations: Sequence[Annotation]) -> dict[str, list[Annotation]]:
    items: dict[str, list[Annotation]] = {}
    for a in annotations:
        if a.kind == ANNOTATOR and a.submitted:
            items.setdefault(a.conv_id, []).append(a)
    return {k: sorted(v, key=lambda a: a.annotator) for k, v in items.items() if len(v) >= 2}


def _quiet(fn: Callable[[], float]) -> float:
    """A kappa, NaN where it is undefined (every answer one category), never a warning."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        try:
            return float(fn())
        except (ValueError, ZeroDivisionError):
            return float("nan")


def _cohen(matrix: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score  # here: pages without agreement start faster

    return _quiet(lambda: cohen_kappa_score(matrix[:, 0], matrix[:, 1]))


def _fleiss(matrix: np.ndarray) -> float:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa  # as above

    return _quiet(lambda: fleiss_kappa(aggregate_raters(matrix)[0], method="fleiss"))


def _boot_kappa(matrix: np.ndarray, draws: np.ndarray, k: int, cohen: bool) -> np.ndarray:
    """The kappa of every bootstrap draw at once (thousands of library calls would take
    seconds a page): the same formulas as scikit-learn's and statsmodels', which the
    point estimate uses and the tests compare these with."""
    sample = matrix[draws]  # draws x items x annotators
    with np.errstate(divide="ignore", invalid="ignore"):
        if cohen:
            first, second = sample[..., 0], sample[..., 1]
            observed = (first == second).mean(axis=1)
            p1 = np.stack([(first == c).mean(axis=1) for c in range(k)], axis=1)
            p2 = np.stack([(second == c).mean(axis=1) for c in range(k)], axis=1)
            expected = (p1 * p2).sum(axis=1)
        else:
            raters = sample.shape[2]
            counts = np.stack([(sample == c).sum(axis=2) for c in range(k)], axis=2)
            observed = ((counts * (counts - 1)).sum(axis=2) / (raters * (raters - 1))).mean(axis=1)
            shares = counts.sum(axis=1) / (sample.shape[1] * raters)
            expected = (shares**2).sum(axis=1)
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def category_agreement(
    annotations: Sequence[Annotation], per_item: int, seed: int = 0
) -> dict[str, object]:
    """Kappa on the category over dialogues every annotator (``per_item``) submitted.

    Returns a dict with :data:`CATEGORY_COLUMNS`; ``kappa`` is None with a ``note``
    where it cannot be computed (fewer than two dialogues, or one category only).
    """
    items = {
        k: v[:per_item]
        for k, v in _by_item(annotations).items()
        if len(v) >= max(per_item, 2) and v[0].category != HANDCRAFTED
    }
    people = sorted({a.annotator for v in items.values() for a in v})
    result: dict[str, object] = dict.fromkeys(CATEGORY_COLUMNS)
    result.update(dialogues=len(items), annotators=len(people), note="")
    if len(items) < 2:
        result.update(
            method="-",
            note=_(
                "kappa needs 2 or more dialogues every annotator has submitted ({n} so far)",
                n=len(items),
            ),
        )
        return result
    codes = sorted({a.category or "" for v in items.values() for a in v})
    matrix = np.array([[codes.index(a.category or "") for a in v] for v in items.values()])
    same_two = per_item == 2 and len(people) == 2
    method, kappa_of = ("Cohen's kappa", _cohen) if same_two else ("Fleiss' kappa", _fleiss)
    kappa = kappa_of(matrix)
    observed = float(np.mean([len(set(row)) == 1 for row in matrix]))
    result.update(method=method, observed_agreement=round(observed, 4))
    if np.isnan(kappa):
        result["note"] = _("kappa undefined: every answer is the same category")
        return result
    draws = resample_indices(len(matrix), seed)
    interval = percentile_interval(_boot_kappa(matrix, draws, len(codes), cohen=same_two))
    low, high = interval if interval is not None else (np.nan, np.nan)
    result.update(kappa=round(kappa, 4), ci_low=round(float(low), 4), ci_high=round(float(high), 4))
    return result


def _overlaps(a: Span, b: Span) -> bool:
    return a.ko.position == b.ko.position and a.ko.start < b.ko.end and b.ko.start < a.ko.end


def _same_place(a: Span, b: Span) -> bool:
    return (a.ko.position, a.ko.start, a.ko.end) == (b.ko.position, b.ko.start, b.ko.end)


def matched(
    first: Sequence[Span], second: Sequence[Span], exact: bool, any_type: bool = False
) -> int:
    """How many spans of ``first`` find a partner of the same type in ``second``, each
    partner used once (exact: same turn and offsets; else: overlapping on the same turn).
    ``any_type``: the partner may have another type (location-only agreement)."""
    if exact and not any_type:
        return len({s.key for s in first} & {s.key for s in second})
    return len(_pairs(first, second, exact, any_type))


def _pairs(
    first: Sequence[Span], second: Sequence[Span], exact: bool, any_type: bool
) -> list[tuple[int, int]]:
    """Spans of ``first`` and ``second`` matched one to one, by index: a partner of the same
    type is taken first, then (``any_type``) one of another type."""
    place = _same_place if exact else _overlaps
    order = sorted(range(len(first)), key=lambda i: first[i].key)
    used: set[int] = set()
    done: set[int] = set()
    found: list[tuple[int, int]] = []
    rounds = (True, False) if any_type else (True,)
    for same_type in rounds:
        for i in order:
            if i in done:
                continue
            for j, b in enumerate(second):
                if j in used or not place(first[i], b):
                    continue
                if same_type and first[i].type != b.type:
                    continue
                used.add(j)
                done.add(i)
                found.append((i, j))
                break
    return found


def location_agreement(annotations: Sequence[Annotation]) -> dict[str, object]:
    """Span F1 with the type ignored (the same words, any type), exact and overlapping,
    pooled over the same pairs as :func:`span_agreement`."""
    exact = overlap = spans = pairs = 0
    for people in _by_item(annotations).values():
        for a, b in itertools.combinations(people, 2):
            exact += matched(a.spans, b.spans, exact=True, any_type=True)
            overlap += matched(a.spans, b.spans, exact=False, any_type=True)
            spans += len(a.spans) + len(b.spans)
            pairs += 1
    return {
        "exact_f1": round(2 * exact / spans, 4) if spans else None,
        "overlap_f1": round(2 * overlap / spans, 4) if spans else None,
        "spans": spans,
        "pairs": pairs,
    }


def type_confusion(annotations: Sequence[Annotation]) -> pd.DataFrame:
    """Types x types over spans whose texts overlap, between every pair of annotators of a
    dialogue: a cell counts the pairs of spans where one annotator chose the row's type and
    the other the column's (each pair counted in both cells, so the table is symmetric
    and a row sums to the spans of that type). The diagonal is agreement; ``NO_SPAN``
    holds the spans the other annotator did not mark at all."""
    counts: dict[tuple[str, str], int] = {}

    def add(row: str, column: str) -> None:
        counts[row, column] = counts.get((row, column), 0) + 1

    for people in _by_item(annotations).values():
        for a, b in itertools.combinations(people, 2):
            found = _pairs(a.spans, b.spans, exact=False, any_type=True)
            for i, j in found:
                add(a.spans[i].type, b.spans[j].type)
                add(b.spans[j].type, a.spans[i].type)
            for i in set(range(len(a.spans))) - {i for i, _j in found}:
                add(a.spans[i].type, NO_SPAN)
                add(NO_SPAN, a.spans[i].type)
            for j in set(range(len(b.spans))) - {j for _i, j in found}:
                add(b.spans[j].type, NO_SPAN)
                add(NO_SPAN, b.spans[j].type)
    kinds = sorted({row for row, _column in counts} - {NO_SPAN})
    labels = [*kinds, NO_SPAN] if counts else []
    return pd.DataFrame(
        [[counts.get((r, c), 0) for c in labels] for r in labels], index=labels, columns=labels
    )


def span_agreement(annotations: Sequence[Annotation]) -> pd.DataFrame:
    """Span F1 per signal type and over all types, exact and overlapping, pooled over
    every pair of annotators of every dialogue with two or more submitted answers."""
    totals: dict[str, list[int]] = {}
    for people in _by_item(annotations).values():
        for a, b in itertools.combinations(people, 2):
            kinds = {s.type for s in a.spans} | {s.type for s in b.spans}
            for kind in [ALL_TYPES, *sorted(kinds)]:
                left = [s for s in a.spans if kind in (ALL_TYPES, s.type)]
                right = [s for s in b.spans if kind in (ALL_TYPES, s.type)]
                row = totals.setdefault(kind, [0, 0, 0, 0])
                row[0] += matched(left, right, exact=True)
                row[1] += matched(left, right, exact=False)
                row[2] += len(left) + len(right)
                row[3] += 1
    rows = [
        {
            "type": kind,
            "exact_f1": round(2 * e / n, 4) if n else None,
            "overlap_f1": round(2 * o / n, 4) if n else None,
            "spans": n,
            "pairs": pairs,
        }
        for kind, (e, o, n, pairs) in sorted(
            totals.items(), key=lambda kv: (kv[0] != ALL_TYPES, kv[0])
        )
    ]
    return pd.DataFrame(rows, columns=SPAN_COLUMNS)


def agreement_table(annotations: Sequence[Annotation], project: dict[str, object]) -> pd.DataFrame:
    """Category kappa and span F1 as one citable table, each row naming the project and
    its taxonomy version: measure, type, value, CI, how many, method or note."""
    per_item = int(str(project["per_item"]))
    category = category_agreement(annotations, per_item)
    rows = [
        {
            "measure": "category kappa",
            "type": "",
            "value": category["kappa"],
            "ci_low": category["ci_low"],
            "ci_high": category["ci_high"],
            "n": category["dialogues"],
            "detail": _(
                "{method}; observed agreement {observed}",
                method=category["method"],
                observed=category["observed_agreement"],
            )
            if category["kappa"] is not None
            else category["note"],
        }
    ]
    location = location_agreement(annotations)
    for measure, key in (
        ("span F1 location exact", "exact_f1"),
        ("span F1 location overlap", "overlap_f1"),
    ):
        rows.append(
            {
                "measure": measure,
                "type": ALL_TYPES,
                "value": location[key],
                "ci_low": None,
                "ci_high": None,
                "n": location["spans"],
                "detail": _("{n} annotator pair(s); the type ignored", n=location["pairs"]),
            }
        )
    for span in span_agreement(annotations).itertuples():
        for measure, value in (
            ("span F1 exact", span.exact_f1),
            ("span F1 overlap", span.overlap_f1),
        ):
            rows.append(
                {
                    "measure": measure,
                    "type": span.type,
                    "value": value,
                    "ci_low": None,
                    "ci_high": None,
                    "n": span.spans,
                    "detail": _("{n} annotator pair(s)", n=span.pairs),
                }
            )
    return pd.DataFrame(rows).assign(
        annotation_project=f"{project['id']}: {project['name']}",
        taxonomy_version=project["taxonomy_version"],
    )
