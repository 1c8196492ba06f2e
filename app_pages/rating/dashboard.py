"""Admin: progress of a study, per rater and per item, and the ratings export."""

import streamlit as st

from components.core import auth, resources, tables
from components.rating import crowd_admin, eval_card_view, prolific_panel
from koed_core import i18n
from koed_core.i18n import N_, _
from koed_core.rating import report as rating_report

KINDS = {"response": N_("response"), "attention": N_("attention")}

st.title(_("Study dashboard"))
auth.require("admin")
rules = resources.rules()
studies = rules.studies()
if not studies:
    st.info(_("No study yet: create one on the Studies page."))
    st.stop()
names = {s["id"]: f"{s['id']} · {s['name']}" for s in studies}
study_id = st.selectbox(_("Study"), list(names), format_func=names.get)

items = rating_report.item_progress(rules, study_id)
raters = rating_report.rater_report(rules, study_id)
totals = rating_report.study_totals(items, raters)
cols = st.columns(4)
checks = int((items["kind"] == "attention").sum()) if not items.empty else 0
cols[0].metric(
    _("Responses with all their raters"),
    _("{n} of {total}", n=i18n.number(totals["complete"]), total=i18n.number(totals["items"])),
    help=_(
        "Model responses only; raters also get attention checks ({checks} in this study): a "
        "rater's own n of m on Rate responses includes them, a crowd worker's never does.",
        checks=checks,
    ),
)
cols[1].metric(_("Items rated (all raters)"), i18n.number(totals["rated"]))
cols[2].metric(_("Raters"), i18n.number(totals["raters"]))
cols[3].metric(
    _("Median time per item"),
    _("{seconds} s", seconds=i18n.number(totals["median_s"])) if totals["median_s"] else _("n/a"),
)

st.subheader(_("Raters"), anchor=False)
st.caption(
    _(
        "Leave-one-out agreement: Spearman correlation of a rater's scores with the mean of "
        "the other raters on the same items and dimensions. Below 0.4, look at that rater's "
        "work. Attention checks passed: a check that said what to choose is passed when every "
        "dimension has that score (one rule for raters and crowd workers alike)."
    )
)
if raters.empty:
    st.caption(_("Nobody has rated in this study yet."))
tables.show(
    raters,
    hide_index=True,
    column_order=[  # the reading beside its number: last, a grid cut it at 1366 px
        "username", "done", "skipped", "flagged", "loo_spearman", "loo_note",
        "attention_pass_rate", "median_s_per_item", "loo_pairs",
    ],
    column_config={
        "username": _("Rater"), "done": _("Rated"), "skipped": _("Skipped"),
        "flagged": _("Flagged"),
        "median_s_per_item": st.column_config.NumberColumn(_("Median s per item"), format="%.0f"),
        "attention_pass_rate": st.column_config.NumberColumn(
            _("Attention checks passed"), format="percent"
        ),
        "loo_spearman": st.column_config.NumberColumn(
            _("Agreement with the others"), format="%.2f"
        ),
        "loo_pairs": _("Shared item-dimensions"), "loo_note": _("Reading"),
    },
)  # fmt: skip
st.subheader(_("Items"), anchor=False)
tables.show(
    items.assign(
        item=[f"#{n + 1}" for n in range(len(items))],
        kind=[_(KINDS[k]) if k in KINDS else k for k in items["kind"]],
    ).drop(columns=["item_id"])
    if not items.empty
    else items,
    hide_index=True,
    height=300,
    column_order=["item", "kind", "lang", "conv_id", "done", "in_progress", "set_aside", "target"],
    column_config={
        "item": _("Item"), "kind": _("Kind"), "lang": _("Language"), "conv_id": _("Dialogue"),
        "done": _("Rated"), "in_progress": _("Being rated"),
        "set_aside": _("Skipped or flagged"), "target": _("Raters wanted"),
    },
)  # fmt: skip
st.subheader(_("Raters in aggregate"), anchor=False)
summary = rating_report.rater_summary(rules)
if summary.get("raters"):
    st.markdown(
        _(
            "Raters: {raters} · rating Korean: {rate_ko} · rating English: {rate_en} · native "
            "Korean speakers: {native_korean} · median years lived in Korea: "
            "{median_years_korea}, in an English-speaking country: {median_years_english}",
            raters=i18n.number(summary["raters"]),
            rate_ko=i18n.number(summary["rate_ko"]),
            rate_en=i18n.number(summary["rate_en"]),
            native_korean=i18n.number(summary["native_korean"]),
            median_years_korea=i18n.number(summary["median_years_korea"], 1),
            median_years_english=i18n.number(summary["median_years_english"], 1),
        )
    )
else:
    st.caption(_("No rater has finished onboarding yet."))
rows = rating_report.export_rows(rules, study_id, resources.server_key())
downloads = [(_("Ratings CSV"), rating_report.rows_csv, "csv")]
downloads.append((_("Ratings JSONL"), rating_report.rows_jsonl, "jsonl"))
for column, (label, write, ext) in zip(st.columns([1, 1, 3]), downloads, strict=False):
    name = f"koed_ratings_study{study_id}.{ext}"  # each file written when asked for:
    column.download_button(label, lambda w=write: w(rows), file_name=name, disabled=not rows)

eval_card_view.render_card(study_id)
crowd_admin.render_crowd_dashboard(study_id)
prolific_panel.render_prolific_links(study_id)
