"""Translated variants (issue 65): built from a translation with the source's structure,
versioned with provenance, imported whole or refused naming the line, translated by a
model, and run and judged like a language that records the version it read."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.cli import main
from koed_core.db import Runs, Store
from koed_core.db.variants import Variants
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import Translation, apply, source_hash, source_texts
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings
from koed_core.models.protocol import build_task
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.models.translate import TranslateAsk, load_translate_prompt, translate_all
from koed_core.models.variant_texts import VariantError, import_lines, read_variant
from koed_core.paths import SAMPLE_FILE

SAMPLE = load_dataset(SAMPLE_FILE)


def _with_ko_only_turn():  # type: ignore[no-untyped-def]
    return next(d for d in SAMPLE.dialogues if d.ko_only_turns)


def translation_lines(variant: str, dialogues: Iterable[Dialogue], tag: str = "T") -> list[str]:
    """A translations file of ``variant`` as ``koed translate import`` reads it, one JSON
    line a dialogue: each source text prefixed ``tag:`` (so a test can tell it apart)."""
    out = []
    for d in dialogues:
        situation, turns = source_texts(d, variant)
        line = {
            "conv_id": d.conv_id,
            "variant": variant,
            "situation": f"{tag}:{situation}",
            "turns": [f"{tag}:{t}" for t in turns],
        }
        out.append(json.dumps(line, ensure_ascii=False))
    return out


def test_a_variant_keeps_the_source_turns_korean_only_ones_included() -> None:
    """en-from-ko translates every turn with Korean text, the reconstruction's added ones
    too: the variant's English context is the Korean context turn for turn."""
    dialogue = _with_ko_only_turn()
    _situation, turns = source_texts(dialogue, "en-from-ko")
    variant = apply(
        dialogue,
        Translation(dialogue.conv_id, "en-from-ko", "S", tuple(f"E{i}" for i in range(len(turns)))),
    )
    korean, english = build_task(dialogue, "ko"), build_task(variant, "en")
    assert [t.role for t in english.turns] == [t.role for t in korean.turns]
    assert len(english.turns) == len(korean.turns) and english.reference is not None
    assert variant.labels == dialogue.labels and variant.korean_emotion == dialogue.korean_emotion
    assert variant.situation_en == "S" and variant.situation_ko == dialogue.situation_ko
    with pytest.raises(ValueError, match="turns, but the ko side has"):
        apply(dialogue, Translation(dialogue.conv_id, "en-from-ko", "S", ("one",)))


def test_import_is_versioned_with_provenance_and_a_new_version_changes_only_its_dialogues(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "k.db")
    first, second = SAMPLE.dialogues[0], SAMPLE.dialogues[1]
    [v1] = import_lines(store, SAMPLE, translation_lines("ko-from-en", [first, second]), "J. Kim")
    assert (v1.variant, v1.version, v1.made_by, v1.translator) == (
        "ko-from-en",
        1,
        "person",
        "J. Kim",
    )
    assert v1.source_sha256 == SAMPLE.sha256 and v1.dialogues == 2
    [v2] = import_lines(store, SAMPLE, translation_lines("ko-from-en", [first], tag="U"), "H. Lee")
    assert v2.version == 2 and v2.dialogues == 1
    now = read_variant(store, SAMPLE.dialogues, "ko-from-en")
    assert now.version.id == v2.id
    assert now.dialogues[first.conv_id].situation_ko.startswith("U:")
    assert now.dialogues[second.conv_id].situation_ko.startswith("T:")  # kept from v1
    before = Variants(store).read("ko-from-en", 1)
    assert before[first.conv_id].translation.situation.startswith("T:")


def test_a_bad_file_is_refused_whole_naming_the_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "k.db")
    good = translation_lines("en-from-ko", SAMPLE.dialogues[:2])
    short = json.loads(good[1])
    short["turns"] = short["turns"][:-1]
    cases = {
        "line 2: not JSON": [good[0], "{oops"],
        "line 2: missing turns": [
            good[0],
            '{"conv_id": "x", "variant": "en-from-ko", "situation": ""}',
        ],
        "line 2: variant 'fr' is not one of": [good[0], good[1].replace("en-from-ko", "fr")],
        "line 2: conv_id 'nope' is not in": [
            good[0],
            good[1].replace(SAMPLE.dialogues[1].conv_id, "nope"),
        ],
        "line 2: " + SAMPLE.dialogues[1].conv_id: [good[0], json.dumps(short, ensure_ascii=False)],
        "line 3: " + SAMPLE.dialogues[0].conv_id + " is given twice": [*good, good[0]],
    }
    for said, lines in cases.items():
        with pytest.raises(VariantError, match=said):
            import_lines(store, SAMPLE, lines, "J. Kim")
    assert Variants(store).versions() == []  # nothing of any refused file stored


def test_a_translation_of_changed_source_text_is_left_out(tmp_path: Path) -> None:
    import dataclasses

    store = Store(tmp_path / "k.db")
    import_lines(store, SAMPLE, translation_lines("en-from-ko", SAMPLE.dialogues[:2]), "J. Kim")
    first = SAMPLE.dialogues[0]
    changed = dataclasses.replace(
        first, turns=(dataclasses.replace(first.turns[0], ko="바뀐 말"), *first.turns[1:])
    )
    assert source_hash(changed, "en-from-ko") != source_hash(first, "en-from-ko")
    read = read_variant(store, [changed, SAMPLE.dialogues[1]], "en-from-ko")
    assert read.stale == (first.conv_id,) and list(read.dialogues) == [SAMPLE.dialogues[1].conv_id]


@pytest.mark.slow
def test_a_run_in_a_variant_is_judged_on_what_the_model_saw_and_records_the_version(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    store = Store(tmp_path / "k.db")
    chosen = SAMPLE.dialogues[:3]
    spec = ModelSpec(name="m", backend="openai", model="fake", base_url=fake_openai.base_url)
    request = RunRequest("m", langs=("ko", "en-from-ko"), protocol="direct")
    with pytest.raises(VariantError, match="en-from-ko has no translation yet"):
        run_benchmark(store, make_client(spec, None), spec, chosen, SAMPLE.sha256, request)
    assert Runs(store).run_table().empty  # refused before anything was stored
    [version] = import_lines(store, SAMPLE, translation_lines("en-from-ko", chosen[:2]), "J. Kim")
    report = run_benchmark(store, make_client(spec, None), spec, chosen, SAMPLE.sha256, request)
    rows = store.rows("select conv_id, lang, context from responses order by conv_id, lang")
    variant_rows = [r for r in rows if r["lang"] == "en-from-ko"]
    assert len(variant_rows) == 2  # the third dialogue has no translation: not asked
    for row in variant_rows:
        context = json.loads(row["context"])
        assert all(text.startswith("T:") for _role, text in context)
    config = json.loads(store.rows("select config from runs")[0]["config"])
    assert config["variants"] == f"en-from-ko v1 {version.id}"
    asked = [r["messages"][-1]["content"] for r in fake_openai.requests]
    assert any("T:" in text for text in asked)

    from koed_core.judge.judging import judge_run
    from koed_core.judge.request import JudgeRequest

    fake_openai.requests.clear()
    judge = ModelSpec(name="j", backend="openai", model="fake", base_url=fake_openai.base_url)
    judged = judge_run(
        store, make_client(judge, None), judge, JudgeRequest(report.run_id, judge="j", dims=("CA",))
    )
    assert judged.failed == 0
    prompts = [json.dumps(r["messages"], ensure_ascii=False) for r in fake_openai.requests]
    in_variant = [p for p in prompts if "T:" in p]
    assert len(in_variant) == 2 and all("English" in p for p in in_variant)
    # a new version makes a new run: the old one keeps the texts it was asked with
    import_lines(store, SAMPLE, translation_lines("en-from-ko", chosen[:2], tag="V"), "H. Lee")
    again = run_benchmark(store, make_client(spec, None), spec, chosen, SAMPLE.sha256, request)
    assert again.run_id != report.run_id


def test_the_run_id_of_a_run_without_variants_is_unchanged() -> None:
    from koed_core.db import Decoding, RunConfig

    config = RunConfig(
        "m", "openai", "x", None, "western", "direct", "v", Decoding(0.7, 256), "sha"
    )
    # the id a run had before variants existed (the field at None is left out)
    assert config.run_id == RunConfig(**{**config.__dict__, "variants": None}).run_id
    assert config.run_id != RunConfig(**{**config.__dict__, "variants": "en-from-ko v1 x"}).run_id


def test_a_model_translates_turn_by_turn_with_the_prompt_stored(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    store = Store(tmp_path / "k.db")
    dialogue = _with_ko_only_turn()
    fake_openai.reply_fn = lambda body: "EN " + body["messages"][-1]["content"][:10]
    spec = ModelSpec(name="m", backend="openai", model="fake", base_url=fake_openai.base_url)
    prompt = load_translate_prompt()
    report = translate_all(
        store,
        make_client(spec, None),
        spec,
        [dialogue],
        SAMPLE.sha256,
        TranslateAsk("en-from-ko", prompt, GenerationSettings(temperature=0.0)),
    )
    _situation, turns = source_texts(dialogue, "en-from-ko")
    assert report.translated == 1 and len(fake_openai.requests) == 1 + len(turns)
    version = report.version
    assert version is not None and version.model == "m (fake)"
    assert version.prompt_version == prompt.version and version.made_by == "model"
    stored = store.rows("select prompt from variant_versions")[0]["prompt"]
    assert "professional translator" in stored
    read = read_variant(store, [dialogue], "en-from-ko").dialogues[dialogue.conv_id]
    assert [t.en for t in read.turns] == [("EN " + t[:10]).strip() for t in turns]
    system = fake_openai.requests[1]["messages"][0]["content"]
    assert "from Korean into English" in system and "said by the Speaker" in system


def test_koed_translate_import_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "k.db"
    good = tmp_path / "t.jsonl"
    good.write_text(
        "\n".join(translation_lines("en-from-ko", SAMPLE.dialogues[:2])) + "\n", encoding="utf-8"
    )
    args = ["--data", str(SAMPLE_FILE), "--db", str(db)]
    assert main(["translate", "import", str(good), "--translator", "J. Kim", *args]) == 0
    assert "en-from-ko v1" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text(encoding="utf-8") + "[1]\n", encoding="utf-8")
    assert main(["translate", "import", str(bad), "--translator", "J. Kim", *args]) == 1
    assert "line 3: expected an object, found list" in capsys.readouterr().err
    assert main(["translate", "list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "en-from-ko\t1\t" in out and "J. Kim" in out and "en-from-ko\t2" not in out


def test_the_variant_tables_come_to_an_old_database(tmp_path: Path) -> None:
    """A database made before m023 takes the variant tables on its first open."""
    from koed_core.db import migrations

    path = tmp_path / "old.db"
    Store(path)
    with sqlite3.connect(path) as conn:
        for table in ("variant_checks", "variant_dialogues", "variant_versions"):
            conn.execute(f"drop table {table}")
        conn.execute("delete from _koed_migrations where name = 'm023_variants'")
    store = Store(path)
    assert {"variant_versions", "variant_dialogues", "variant_checks"} <= set(
        store.db.table_names()
    )
    assert migrations.applied(store.db)[-1] == "m023_variants"


@pytest.mark.slow
def test_the_runs_form_offers_the_variants_that_exist(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[1]

    def languages() -> list[str]:
        at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
        at.switch_page("app_pages/models/runs.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return list(next(m for m in at.multiselect if m.label == "Languages").options)

    assert len(languages()) == 2  # Korean and English only: no variant yet
    store = Store(tmp_path / "koed.db")  # KOED_DB (conftest)
    import_lines(store, SAMPLE, translation_lines("ko-from-en", SAMPLE.dialogues[:1]), "J. Kim")
    offered = languages()
    assert len(offered) == 3 and "Korean, translated from the English (ko-from-en)" in offered


@pytest.mark.slow
def test_the_offline_default_translates_a_one_dialogue_sample_end_to_end(
    embedded_copy: dict[str, bool], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SmolLM2 (backend "embedded", no network, no key) translates one short dialogue into
    en-from-ko through `koed translate run`; the version is stored with the model and the
    prompt's version, keeps the Korean turn count, and a run in the variant reads it."""
    raw = json.loads(SAMPLE_FILE.read_text(encoding="utf-8"))
    one = tmp_path / "one.json"
    one.write_text(json.dumps([r for r in raw if r["conv_id"] == "sample:1_conv:15"]), "utf-8")
    db = tmp_path / "k.db"
    common = ["--data", str(one), "--db", str(db)]
    translate = ["translate", "run", "--variant", "en-from-ko", "--model", "smollm2"]
    assert main([*translate, "--max-tokens", "24", *common]) == 0
    assert "en-from-ko v1" in capsys.readouterr().out
    store = Store(db)
    [version] = Variants(store).versions()
    assert version.made_by == "model" and version.model == "smollm2"
    assert version.prompt_version == load_translate_prompt().version
    dialogue = load_dataset(one).dialogues[0]
    read = read_variant(store, [dialogue], "en-from-ko").dialogues[dialogue.conv_id]
    assert len(read.turns) == len(source_texts(dialogue, "en-from-ko")[1])
    assert all(t.en.strip() for t in read.turns)
    run = ["run", "--model", "human", "--lang", "en-from-ko", "--protocol", "direct"]
    assert main([*run, *common]) == 0
    [row] = store.rows("select lang, text from responses")
    assert row["lang"] == "en-from-ko" and row["text"] == read.turns[-1].en


def test_a_linguist_accepts_and_edits_turns_and_chrf_measures_the_edits(tmp_path: Path) -> None:
    """Accepting records the check on the version checked; an edit is the variant's next
    version by its reviewer (which the next run reads), and chrF compares the model's
    text with what people left, as sacrebleu computes it."""
    from sacrebleu.metrics.chrf import CHRF

    from koed_core.annotation.variant_review import (
        ReviewError,
        accept,
        edit,
        review_report,
        review_sample,
        review_turns,
    )
    from koed_core.db.variants import VersionMeta
    from koed_core.dialogues.variants import source_hash

    store = Store(tmp_path / "k.db")
    dialogue = SAMPLE.dialogues[0]
    _situation, sources = source_texts(dialogue, "en-from-ko")
    machine = tuple(f"machine turn {i} about the delivery" for i in range(len(sources)))
    Variants(store).add_version(
        VersionMeta("en-from-ko", "model", SAMPLE.sha256, model="m", prompt_version="p"),
        [
            (
                Translation(dialogue.conv_id, "en-from-ko", "S", machine),
                source_hash(dialogue, "en-from-ko"),
            )
        ],
    )
    assert review_report(store, "en-from-ko").chrf is None  # nothing checked yet
    turns = review_turns(store, dialogue, "en-from-ko")
    assert [t.source for t in turns] == list(sources) and turns[0].translation == machine[0]
    accept(store, dialogue, "en-from-ko", 0, "linguist")
    edit(store, dialogue, "en-from-ko", 1, "a person's turn about the parcel", "linguist")
    with pytest.raises(ReviewError, match="cannot be empty"):
        edit(store, dialogue, "en-from-ko", 2, "  ", "linguist")
    with pytest.raises(ReviewError, match="no turn 99"):
        accept(store, dialogue, "en-from-ko", 98, "linguist")
    versions = Variants(store).versions("en-from-ko")
    assert [v.made_by for v in versions] == ["model", "person"]
    assert versions[1].translator == "linguist" and versions[1].created
    read = read_variant(store, [dialogue], "en-from-ko").dialogues[dialogue.conv_id]
    assert read.turns[1].en == "a person's turn about the parcel"
    assert read.turns[0].en == machine[0]  # untouched turns carried over
    report = review_report(store, "en-from-ko")
    assert (report.turns_checked, report.accepted, report.edited) == (2, 1, 1)
    expected = CHRF().corpus_score(
        [machine[0], machine[1]], [[machine[0], "a person's turn about the parcel"]]
    )
    assert report.chrf == pytest.approx(expected.score) and 0 < report.chrf < 100
    # the edited version's turns are checked against the new version from now on
    assert review_turns(store, dialogue, "en-from-ko")[1].version_id == versions[1].id
    assert review_sample({c: dialogue for c in "abcdef"}, 3, seed=1) == review_sample(
        {c: dialogue for c in "abcdef"}, 3, seed=1
    )


def test_the_annotate_page_checks_a_variant_turn_by_turn(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    from koed_core.annotation.variant_review import review_report

    store = Store(tmp_path / "koed.db")  # KOED_DB (conftest): one person's app, no accounts
    import_lines(store, SAMPLE, translation_lines("ko-from-en", SAMPLE.dialogues[:3]), "J. Kim")
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/annotation/annotate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    conv_id = at.selectbox(key="annotate.review.dialogue").value
    base = f"annotate.review.text.ko-from-en.{conv_id}"
    at.button(key=f"{base}.0.accept").click().run()
    at.text_area(key=f"{base}.1").set_value("사람이 고친 발화").run()
    at.button(key=f"{base}.1.edit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    report = review_report(store, "ko-from-en")
    assert (report.turns_checked, report.accepted, report.edited) == (2, 1, 1)
    latest = Variants(store).latest("ko-from-en")
    assert latest is not None and latest.version == 2 and latest.made_by == "person"
    assert "2 turns checked by people: 1 accepted, 1 edited." in [c.value for c in at.caption]


def test_the_explorer_shows_a_variant_column_beside_ko_and_en(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    store = Store(tmp_path / "koed.db")  # KOED_DB (conftest)
    first = SAMPLE.dialogues[0]
    import_lines(store, SAMPLE, translation_lines("en-from-ko", [first]), "J. Kim")
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "app.py"), default_timeout=60).run()
    at.selectbox(key="d").set_value(first.conv_id).run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [m.value for m in at.markdown]
    assert "**English, translated from the Korean (en-from-ko) · en\\-from\\-ko v1**" in heads
    texts = [t.value for t in at.text]
    _situation, turns = source_texts(first, "en-from-ko")
    assert f"T:{turns[0]}" in texts and f"T:{first.situation_ko}" in texts
