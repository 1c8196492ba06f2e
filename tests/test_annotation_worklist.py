"""Finding work: an annotator's worklist (own status, the partners' progress
without their answers, filters by status, category and type, "My spans" across the
project) in koed_core and on the Annotate page."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components.core.literal import md
from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.spans import Span, side_at
from koed_core.annotation.taxonomy import CONTEXT_MODIFIED, SIMPLY_TRANSFERRED
from koed_core.annotation.worklist import (
    COLUMNS,
    NEW,
    NO_CATEGORY,
    Filters,
    first_words,
    matching,
    my_spans,
    partner_status,
    text_or_none,
    worklist,
)
from koed_core.db import Store
from koed_core.dialogues.dataset import Dataset, load_dataset
from koed_core.dialogues.dialogue import Dialogue
from koed_core.paths import SAMPLE_FILE

ROOT = Path(__file__).resolve().parents[1]


def _span(dialogue: Dialogue, position: int, needle: str, kind: str) -> Span:
    text = dialogue.turns[position - 1].ko
    start = text.index(needle)
    return Span(side_at(dialogue, "ko", position, start, start + len(needle)), kind, None, True)


def _with_english(dialogue: Dialogue, position: int, ko: str, en: str, kind: str) -> Span:
    span = _span(dialogue, position, ko, kind)
    start = dialogue.turns[position - 1].en.index(en)
    english = side_at(dialogue, "en", position, start, start + len(en))
    return Span(span.ko, kind, english, False)


@pytest.fixture
def dataset() -> Dataset:
    return load_dataset(SAMPLE_FILE)


def _partnered(annotations: AnnotationRules, dataset: Dataset, me: str) -> int:
    """Four dialogues, two annotators each: ``me`` submitted the first (a place, with its
    English), drafts the second (food); bob drafts the first (another category, a name
    span, a note) and submitted the second; the third and fourth are new to both."""
    one, two = dataset.dialogues[0], dataset.dialogues[1]
    project = annotations.create_project(
        "pilot", dataset, [d.conv_id for d in dataset.dialogues[:4]], per_item=2
    )
    place = _with_english(one, 3, "편의점", "convenience store", "places")
    annotations.save(project, one, me, CONTEXT_MODIFIED, "", [place], submit=True)
    annotations.save(project, two, me, None, "", [_span(two, 1, "택배", "food")])
    bobs = [_span(one, 1, "야근", "names")]
    annotations.save(project, one, "bob", SIMPLY_TRANSFERRED, "bob's secret note", bobs)
    annotations.save(
        project, two, "bob", SIMPLY_TRANSFERRED, "", [_span(two, 3, "화나", "idioms")], True
    )
    return project


def test_the_worklist_counts_partners_and_never_reads_their_answers(
    tmp_path: Path, dataset: Dataset
) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    project = _partnered(annotations, dataset, "alice")
    work = worklist(annotations, project, "alice").set_index("conv_id")
    assert list(work.reset_index().columns) == COLUMNS
    one, two, three = (d.conv_id for d in dataset.dialogues[:3])
    assert work.loc[one, "yours"] == "submitted" and work.loc[one, "category"] == CONTEXT_MODIFIED
    assert work.loc[one, "types"] == ("places",)
    assert (work.loc[one, "others_submitted"], work.loc[one, "others_drafting"]) == (0, 1)
    assert (work.loc[two, "others_submitted"], work.loc[two, "others_drafting"]) == (1, 0)
    assert work.loc[two, "yours"] == "draft" and text_or_none(work.loc[two, "category"]) is None
    assert work.loc[three, "yours"] == NEW and work.loc[three, "types"] == ()
    assert work.loc[one, "others_needed"] == 1 and not work.loc[one, "complete"]
    assert partner_status(0, 1) == "draft" and partner_status(1, 0) == "submitted"
    assert partner_status(0, 0) == NEW
    # blind: bob's category, types, note and texts are nowhere in what alice gets
    seen = work.to_string() + my_spans(annotations, project, "alice", dataset).to_string()
    for secret in ("simply_transferred", "names", "idioms", "야근", "화나", "secret"):
        assert secret not in seen, secret
    # still blind once the dialogue is complete: the worklist is one person's own answers
    annotations.save(project, dataset.dialogues[0], "bob", SIMPLY_TRANSFERRED, "", [], submit=True)
    work = worklist(annotations, project, "alice").set_index("conv_id")
    assert work.loc[one, "complete"] and work.loc[one, "others_submitted"] == 1
    assert "simply_transferred" not in work.to_string()
    # a third annotator: the full dialogues are not open to carol; counts only, no names
    carol = worklist(annotations, project, "carol").set_index("conv_id")
    assert not carol.loc[one, "open"] and not carol.loc[two, "open"] and carol.loc[three, "open"]
    assert "alice" not in carol.to_string() and "bob" not in carol.to_string()


def test_filters_narrow_by_own_status_category_and_type(tmp_path: Path, dataset: Dataset) -> None:
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    project = _partnered(annotations, dataset, "alice")
    work = worklist(annotations, project, "alice")
    one, two, three, four = (d.conv_id for d in dataset.dialogues[:4])
    assert matching(work, Filters()) == [one, two, three, four]
    assert matching(work, Filters.of(statuses=[NEW])) == [three, four]
    assert matching(work, Filters.of(statuses=["draft", "submitted"])) == [one, two]
    assert matching(work, Filters.of(categories=[CONTEXT_MODIFIED])) == [one]
    assert matching(work, Filters.of(categories=[NO_CATEGORY])) == [two, three, four]
    assert matching(work, Filters.of(types=["food"])) == [two]
    assert matching(work, Filters.of(types=["names", "idioms"])) == []  # bob's, not hers
    both = Filters.of(statuses=["draft"], types=["places"])
    assert matching(work, both) == [] and both.active and not Filters().active
    spans = my_spans(annotations, project, "alice", dataset)
    assert list(spans["conv_id"]) == [one, two] and list(spans["type"]) == ["places", "food"]
    assert list(spans["status"]) == ["submitted", "draft"]
    assert spans.loc[0, "en"] == "convenience store"
    assert spans.loc[0, "situation"] == first_words(dataset.dialogues[0].situation_ko)
    only = my_spans(annotations, project, "alice", dataset, types=["food"])
    assert list(only["ko"]) == ["택배"]


def test_missing_cells_read_as_missing_not_as_nan(tmp_path: Path, dataset: Dataset) -> None:
    """pandas 3 reads an empty text cell as NaN (a float): "nan" must never reach a label,
    a filter or the span list."""
    from components.annotation.picker import item_label

    nan = float("nan")
    assert text_or_none(nan) is None and text_or_none(None) is None
    assert text_or_none(pd.NA) is None and text_or_none("x") == "x"
    assert first_words(nan) == "" and first_words("a b c d e f") == "a b c d"
    one, two = (d.conv_id for d in dataset.dialogues[:2])
    frame = pd.DataFrame(
        {
            "conv_id": [one, two],
            "yours": ["draft", None],
            "category": [None, CONTEXT_MODIFIED],
            "types": [(), ("food",)],
            "others_submitted": [0, 1],
            "others_drafting": [0, 0],
        }
    )
    assert pd.isna(frame.loc[1, "yours"]) and pd.isna(frame.loc[0, "category"])
    assert matching(frame, Filters.of(categories=[NO_CATEGORY])) == [one]
    labels = item_label(frame, dataset, 2)
    assert "yours: new · partner: submitted" in labels[two]
    assert "yours: draft · partner: not started" in labels[one]
    assert "nan" not in " ".join(labels.values())
    three = item_label(frame, dataset, 3)[two]
    assert three.endswith("others: 1 of 2 submitted, 0 drafting")
    assert " · partner" not in item_label(frame, dataset, 1)[two]  # alone: nobody to wait on
    annotations = AnnotationRules(Store(tmp_path / "koed.db"))
    project = annotations.create_project("p", dataset, [one], per_item=1)
    dialogue = dataset.dialogues[0]
    annotations.save(project, dialogue, "a", None, "", [_span(dialogue, 3, "편의점", "places")])
    spans = my_spans(annotations, project, "a", dataset)
    assert text_or_none(spans.loc[0, "en"]) is None and bool(spans.loc[0, "no_counterpart"])
    category = worklist(annotations, project, "a").loc[0, "category"]
    assert pd.isna(category) and text_or_none(category) is None


def _page(lang: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if lang:
        at.query_params["lang"] = lang
    return at.run().switch_page("app_pages/annotation/annotate.py").run()


def _picker(at: AppTest):  # type: ignore[no-untyped-def]
    return next(s for s in at.selectbox if str(s.key).startswith("annotate.item."))


def _heading(at: AppTest) -> str:
    return str(at.subheader[0].value)


def _seed_page(dataset: Dataset) -> tuple[AnnotationRules, int]:
    """The one person's app ("local") beside a partner, bob, on four dialogues."""
    annotations = AnnotationRules(Store(os.environ["KOED_DB"]))
    project = _partnered(annotations, dataset, "local")
    three = dataset.dialogues[2]
    annotations.save(project, three, "local", None, "", [_span(three, 1, "의자", "customs")])
    return annotations, project


@pytest.mark.slow
def test_the_picker_shows_the_partner_and_the_filters_narrow_it(dataset: Dataset) -> None:
    _seed_page(dataset)
    one, two, three, four = (d.conv_id for d in dataset.dialogues[:4])
    at = _page()
    assert not at.exception, [e.value for e in at.exception]
    picker = _picker(at)
    labels = dict(zip([one, two, three, four], picker.options, strict=True))
    assert "yours: submitted · partner: draft" in labels[one]
    assert "yours: draft · partner: submitted" in labels[two]
    assert labels[four].endswith("yours: new · partner: not started")
    assert "밤늦게 혼자 골목길을" in labels[one]  # the situation's first words
    page = " ".join(
        [str(e.value) for e in (*at.markdown, *at.text, *at.caption)] + list(picker.options)
    )
    assert "secret" not in page and "bob" not in page  # bob's note, bob's name: never
    at.multiselect(key="annotate.filter.status").set_value(["draft"]).run()
    assert _picker(at).options == [labels[two], labels[three]]
    at.multiselect(key="annotate.filter.status").set_value([]).run()
    at.multiselect(key="annotate.filter.category").set_value([CONTEXT_MODIFIED]).run()
    assert [o.split(" ")[0] for o in _picker(at).options] == [one]
    at.multiselect(key="annotate.filter.category").set_value([]).run()
    at.multiselect(key="annotate.filter.type").set_value(["customs", "food"]).run()
    assert [o.split(" ")[0] for o in _picker(at).options] == [two, three]
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.slow
def test_a_filter_that_drops_the_open_dialogue_says_so_and_shows_the_first_match(
    dataset: Dataset,
) -> None:
    _seed_page(dataset)
    one, two, three = (d.conv_id for d in dataset.dialogues[:3])
    at = _page()
    _picker(at).set_value(one).run()
    assert _picker(at).value == one and _heading(at) == f"Dialogue {md(one)}"
    at.multiselect(key="annotate.filter.type").set_value(["food", "customs"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert _picker(at).value == two and _heading(at) == f"Dialogue {md(two)}"
    assert any("is not among the dialogues these filters leave" in i.value for i in at.info)
    at.run()  # and so it stays
    assert _picker(at).value == two and _heading(at) == f"Dialogue {md(two)}"
    assert any(md(one) in i.value for i in at.info)
    _picker(at).set_value(three).run()  # the annotator moved on: the notice has done its job
    assert _heading(at) == f"Dialogue {md(three)}" and not at.info
    at.multiselect(key="annotate.filter.type").set_value(["values"]).run()
    assert any("No dialogue of yours matches" in i.value for i in at.info)
    assert not at.exception and not at.subheader
    next(b for b in at.button if b.label == "Clear the filters").click().run()
    assert len(_picker(at).options) == 4 and not at.exception


@pytest.mark.slow
def test_my_spans_lists_every_own_span_and_opens_its_dialogue(dataset: Dataset) -> None:
    _seed_page(dataset)
    one, two, three = (d.conv_id for d in dataset.dialogues[:3])
    at = _page()
    table = next(d.value for d in at.dataframe if "situation" in d.value.columns)
    assert list(table["dialogue"]) == [one, two, three]
    assert list(table["Korean"]) == ["편의점", "택배", "의자"]
    assert list(table["English"]) == ["convenience store", "(no counterpart)", "(no counterpart)"]
    assert list(table["your status"]) == ["submitted", "draft", "draft"]
    assert "야근" not in table.to_string()  # bob's span: never here
    at.multiselect(key="annotate.my_spans.type").set_value(["customs"]).run()
    table = next(d.value for d in at.dataframe if "situation" in d.value.columns)
    assert list(table["Korean"]) == ["의자"]
    pick = next(s for s in at.selectbox if s.label == "Open the dialogue of a span")
    assert pick.options == [f"{three} · turn 1: 의자 [Holidays and customs (명절·관습)]"]
    _picker(at).set_value(one).run()
    at.multiselect(key="annotate.filter.status").set_value(["submitted"]).run()  # hides it
    assert [o.split(" ")[0] for o in _picker(at).options] == [one]
    at.button(key="annotate.my_spans.open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _picker(at).value == three and _heading(at) == f"Dialogue {md(three)}"
    assert at.multiselect(key="annotate.filter.status").value == []  # the filter gave way
    at.run()
    assert _picker(at).value == three and _heading(at) == f"Dialogue {md(three)}"


@pytest.mark.slow
def test_the_worklist_is_korean_on_a_korean_page(dataset: Dataset) -> None:
    """What this worklist draws (the picker, the filters, the notice, "My spans") reads
    Korean with ?lang=ko; the rest of the page is tests/test_i18n.py's."""
    from koed_core.dialogues.labels import label_names
    from tests.test_i18n import GLOSS, _english_words, _headers

    _seed_page(dataset)
    at = _page("ko")
    _picker(at).set_value(dataset.dialogues[0].conv_id).run()
    at.multiselect(key="annotate.filter.type").set_value(["food", "customs"]).run()
    assert not at.exception, [e.value for e in at.exception]
    picker = _picker(at)
    assert any("상대 주석자: 제출함" in o for o in picker.options), picker.options
    texts = [picker.label, *picker.options]
    ours = ("annotate.filter.", "annotate.my_spans.")
    for widget in (*at.multiselect, *at.selectbox):
        if str(widget.key).startswith(ours):
            texts += [widget.label, *[str(o) for o in widget.options]]
    texts += [b.label for b in at.button if str(b.key).startswith(ours)]
    mine = [e.label for e in at.expander if e.label.startswith("이 프로젝트에서 내가 표시한 구간")]
    matched = [c.value for c in at.caption if "필터에 맞습니다" in c.value]
    assert len(mine) == 1 and len(matched) == 1, [e.label for e in at.expander]
    texts += mine + matched + [i.value for i in at.info] + [h.value for h in at.subheader]
    table = next(d for d in at.dataframe if "상황" in _headers(d))
    texts += _headers(table)
    assert any("의자" in t for t in texts) and any("필터" in t for t in at.info[0].value.split())
    chosen = [d.conv_id for d in dataset.dialogues[:4]]
    seen = [GLOSS.sub(" ", text) for text in texts]
    left = _english_words(seen, {*chosen, *label_names(), "pilot", "ko", "en", "local"})
    assert not left, "English on the Korean worklist:\n" + "\n".join(left)
