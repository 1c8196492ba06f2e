"""The Empathy gap page's pieces below the chart: the paper's table and the downloads."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from components.core import computed, resources, state, tables, terms
from components.core.literal import md
from koed_core import i18n
from koed_core.db import JudgeConfig, Store
from koed_core.i18n import N_, _
from koed_core.models.runs import run_labels
from koed_core.results import score_sources
from koed_core.results.figures import (
    METRIC_ORDER,
    gap_figure,
    sensitivity_figure,
    turn_gap_figure,
)
from koed_core.results.viewer import Viewer
from koed_core.text import csv_safe

SOURCE_WORDS = {
    "judge": N_("judge"),
    "raters": N_("raters"),
    "emotion": N_("emotion recognition"),
    "judge + raters": N_("judge + raters"),
}
BREAKDOWNS = {"none": None, "per emotion label": "label", "jeong/han vs the rest": "group"}
BREAKDOWN_WORDS = {
    "none": N_("none"),
    "per emotion label": N_("per emotion label"),
    "jeong/han vs the rest": N_("jeong/han vs the rest"),
}


def no_scores_yet(hidden: int = 0) -> None:
    """What the Empathy gap page says before any run is judged: how to get a gap; and,
    where ``hidden`` runs are left out for this reader, that nothing is shown to them
    yet (never "no scores": an admin may see them)."""
    if hidden:
        st.info(
            _(
                "No scores you may see yet: {n} run(s) belong to a study still being "
                "rated, and their numbers are published when an admin closes it.",
                n=i18n.number(hidden),
            )
        )
        return
    st.info(
        _(
            "No single-reply scores yet, so no gap to show here. Run a model in both "
            "languages, then judge it:\n\n"
            "`koed run --model smollm2 --lang ko,en --limit 20`  \n"
            "`koed judge --run RUN_ID --judge NAME`\n\n"
            "Emotion-recognition gaps appear once a `single` or `multi` run has named "
            "emotions in both languages (the `human` reference names none); rater gaps once "
            "a study is rated."
        )
    )


def source_names(store: Store, judge: JudgeConfig | None, study: int | None) -> dict[str, str]:
    """Each source as a chart's subtitle names it: words a room can read."""
    return {
        "judge": _("judge {judge}", judge=judge.spoken) if judge else _("judge"),
        "raters": score_sources.study_label(store, study) if study is not None else _("raters"),
        "emotion": _(
            "emotion recognition (hit rate for single runs, F1 for multi; an answer naming no "
            "label counts as a miss, as in the paper, and again over answered items only)"
        ),
    }


def paper_table(store: Store, dataset_sha256: str, judge: JudgeConfig, viewer: Viewer) -> None:
    """The paper's table (a row per model and protocol) for one judge configuration."""
    with st.expander(_("The paper's table: a row per model and protocol"), expanded=False):
        paper = computed.paper_table(store, dataset_sha256, judge, viewer)
        st.caption(
            _(
                "ED = English, KoED = Korean: means of the judge's scores and of emotion "
                "recognition; gap = KoED minus ED on the rubric, paired by dialogue and "
                "dimension (a dimension scored in one language only counts in neither), "
                "bootstrap 95% CI over dialogues. Judge: {judge}. `koed reproduce` writes the "
                "same table as CSV, Markdown and LaTeX.",
                judge=md(judge.label),
            )
        )
        tables.show(
            paper.drop(columns=[c for c in paper.columns if c.startswith("judge_")]),
            hide_index=True,
        )


def hidden_caption(hidden: int) -> None:
    """How many runs are left out because a study holding them is still being rated."""
    if hidden:
        st.caption(
            md(_("{n} run(s) in a study still being rated are left out until it closes.", n=hidden))
        )


def perception_split(store: Store, judge: JudgeConfig, viewer: Viewer) -> None:
    """The gap split into perception and response: the rubric where the emotion was
    recognised and where it was missed, and the gap with perception held right."""
    table = computed.perception(store, judge, viewer)
    if table is None or table.empty:  # None: its computation's bar is drawn
        return
    with st.expander(_("Perception or response: the gap where the emotion was recognised")):
        emotions = list(dict.fromkeys(["all", *sorted(set(table["emotion"]) - {"all"})]))
        chosen = st.selectbox(
            _("Gold emotion"),
            emotions,
            format_func={
                e: _("every dialogue") if e == "all" else terms.label(e) for e in emotions
            }.get,
            key="gap.perception.emotion",
        )
        table = table[table["emotion"] == chosen]
        from koed_core.results.perception import reader_notes  # scipy: when a split is drawn

        table = table.assign(note=reader_notes(table))  # kept in English for every reader
        st.caption(
            _(
                "Per run and dimension: the judge's score where the model named a gold "
                "emotion (recognised) and where it did not (missed), per language, with "
                "recognised minus missed; and the gap (KoED minus ED, paired by dialogue) over "
                "all dialogues, over those recognised in both languages (the response part: "
                "perception held right) and over those missed in Korean only. Bootstrap 95% "
                "CIs. All minus both recognised (the part that comes with mis-perception) is "
                "resampled as one; replies in the other language are counted apart, and a run "
                "that named no emotion is not split (its note says why). Judge: {judge}.",
                judge=md(judge.label),
            )
        )
        tables.show(
            table.drop(columns=[c for c in table.columns if c.startswith("judge_")]),
            hide_index=True,
        )


def chart_name(source: str, group: str | None = None) -> str:
    """One name for one gap chart's files: the chart's own PNG (its menu's camera), the
    PNG and SVG buttons and its numbers' CSV (``koed_gap_judge_jeong_han``), so the
    files of one chart sort together and say which chart they are."""
    words = ["koed_gap", source, group or ""]
    return re.sub(r"[^0-9A-Za-z]+", "_", "_".join(w for w in words if w)).strip("_")


def chart_config(name: str) -> dict[str, object]:
    """A gap chart's Plotly config: its camera saves the PNG under the chart's name
    (Plotly's own is "newplot")."""
    return {"toImageButtonOptions": {"filename": name}}


def downloads(
    table: pd.DataFrame, source: str, title: str, subtitle: str, admin: bool, name: str
) -> None:
    """The numbers under the chart, CSV, PNG and SVG, all under the chart's ``name``;
    the paper export for admins.

    The images use the talk style (a slide's type sizes) and are drawn only when a
    button is pressed: building a second figure on every click cost 0.15 s."""

    lang = i18n.language()  # the image is drawn when its button is pressed, maybe later

    def image(kind: str) -> bytes:
        with i18n.speaking(lang):
            fig = gap_figure(table[table["source"] == source], title, talk=True, subtitle=subtitle)
        return bytes(fig.to_image(format=kind, width=1600, height=900))

    with st.expander(_("Numbers behind the chart"), expanded=False):
        tables.show(table, hide_index=True)
    cols = st.columns(4 if admin else 3)
    cols[0].download_button(_("Table (CSV)"), csv_safe.to_csv(table), file_name=f"{name}.csv")
    cols[1].download_button(
        _("Chart (PNG)"),
        lambda: image("png"),
        file_name=f"{name}.png",
        mime="image/png",
    )
    cols[2].download_button(
        _("Chart (SVG)"),
        lambda: image("svg"),
        file_name=f"{name}.svg",
        mime="image/svg+xml",
    )
    if admin:  # every study's agreement and every run's configuration: admins only
        cols[3].download_button(
            _("Export for a paper (zip)"),
            resources.export_zip,
            file_name="koed_export.zip",
            mime="application/zip",
        )


def what_moves_the_gap(store: Store, viewer: Viewer) -> None:
    """The sensitivity chart: for a run with the authors' steps, how much each one-step
    variant stored beside it moves the gap (``plans/sensitivity.toml`` makes them)."""
    bases = computed.sensitivity_bases(store, viewer)
    if not bases:
        return
    with st.expander(_("What moves the gap: each step of the pipeline changed alone")):
        labels = run_labels(store)
        named = {
            i: labels.get(run, run) + " · " + _("judge {judge}", judge=judge.spoken)
            for i, (run, judge) in enumerate(bases)
        }
        pick = st.selectbox(
            _("Base (the authors' pipeline)"),
            list(named),
            format_func=named.get,
            key=state.GAP_SENSITIVITY_BASE,
        )
        run_id, judge = bases[pick]
        table = computed.sensitivity_table(store, run_id, judge, viewer)
        metrics = [m for m in METRIC_ORDER if m in set(table["metric"])]
        metric = (
            st.segmented_control(
                _("Metric"), metrics, default=metrics[0], key=state.GAP_SENSITIVITY_METRIC
            )
            or metrics[0]
        )
        fig = sensitivity_figure(
            table,
            metric,
            _("What moves the gap: change from the authors' pipeline, paired, 95% CI"),
            subtitle=labels.get(run_id, run_id) + " · " + _("judge {judge}", judge=judge.spoken),
        )
        st.plotly_chart(fig, width="stretch", theme=None)
        st.caption(
            _(
                "Each bar is one step changed alone, with the rest as the authors had it "
                "(except a variant whose name says it changes several steps at once): the "
                "gap (KoED minus ED, per dialogue) under the variant minus the gap under the "
                "authors' pipeline, over the dialogues both have, with a bootstrap 95% CI. "
                "`koed reproduce plans/sensitivity.toml` makes the variants; the same table "
                "is written as sensitivity.csv. With this many bars some CIs miss 0 by chance: "
                "change_p_holm is each change's bootstrap p-value adjusted over the whole table "
                "(Holm); read a change as real where it is below 0.05. The grey bar and band, "
                "where there is one, is the base judged again with nothing changed: the "
                "judge's own noise, the yardstick for every other bar."
            )
        )
        tables.show(table, hide_index=True)
        st.download_button(
            _("Download the table (CSV)"),
            csv_safe.to_csv(table),
            file_name="sensitivity.csv",
            mime="text/csv",
            key=state.GAP_SENSITIVITY_CSV,
        )


TURN_SOURCES = {"judge": N_("judge"), "raters": N_("raters"), "emotion": N_("emotion recognition")}


def gap_over_turns(
    store: Store, judge: JudgeConfig | None, study: int | None, viewer: Viewer
) -> None:
    """The gap at each Listener turn of the episode runs, per model: does it close as
    the Speaker reveals more, or widen? (Only when episodes are stored.) Folded, and drawn
    when opened: its chart and table cost every run of the page, a full reload included,
    for a section a reader opens now and then."""
    table = computed.turn_gap_table(store, judge, study, viewer)
    if table.empty:
        return
    folded = st.expander(
        _("The gap over turns (multi-turn episodes)"),
        expanded=False,
        key=state.GAP_TURN_OPEN,
        on_change="rerun",
    )
    if not folded.open:
        return
    with folded:
        sources = [s for s in ("judge", "raters", "emotion") if s in set(table["source"])]
        source = (
            st.segmented_control(
                _("Turn gap from"),
                sources,
                default=sources[0],
                key=state.GAP_TURN_SOURCE,
                format_func=i18n.choices(TURN_SOURCES).__getitem__,
            )
            or sources[0]
        )
        part = table[table["source"] == source]
        metrics = [m for m in METRIC_ORDER if m in set(part["metric"])]
        metric = (
            st.segmented_control(
                _("Metric"), metrics, default=metrics[0], key=state.GAP_TURN_METRIC
            )
            or metrics[0]
        )
        named = {
            "judge": _("judge {judge}", judge=judge.spoken) if judge else _("judge"),
            "raters": _("study {id}", id=study),
            "emotion": _("emotion named at each turn (hit rate for single, F1 for multi)"),
        }
        fig = turn_gap_figure(
            part,
            metric,
            _("The gap over turns: KoED minus ED at each Listener turn, paired, 95% CI"),
            subtitle=named[source],
        )
        st.plotly_chart(fig, width="stretch", theme=None)
        st.caption(
            _(
                "EX, IP, ER, EEA, CA: the rubric's five dimensions (Explorations, "
                "Interpretations, Emotional Reactions, Evoked Emotion Alignment, Cultural "
                "Appropriateness). Each episode starts from the dataset's context; a "
                "simulated Speaker, told the situation and the emotion (the Listener is told "
                "neither), answers each Listener turn. At turn t only the dialogues whose "
                "episodes reached t in both languages count; the pairs are in the table. "
                "`koed episodes` makes them; the export writes this table as turn_gaps.csv."
            )
        )
        tables.show(
            part[part["metric"] == metric].drop(columns=["run_id"]),
            hide_index=True,
            column_config={"run_label": _("Run"), "turn": _("Turn"), "pairs": _("Pairs")},
        )
        st.download_button(
            _("Download the table (CSV)"),
            lambda: csv_safe.to_csv(table),  # made when asked for: the section is folded
            file_name="turn_gaps.csv",
            mime="text/csv",
            key=state.GAP_TURN_CSV,
        )
