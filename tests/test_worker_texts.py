"""What a crowd worker reads (issue 67): the scale's direction beside the buttons with
each score's anchor readable without hovering, an attention check that makes the reply's
content irrelevant, label glosses that name the feeling (the native prompt set keeps
the glosses it was made with), and the codes' next steps."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from koed_core.dialogues.labels import gloss
from koed_core.judge.rubric import dimensions
from koed_core.models.emotions import parse_reply
from koed_core.models.prompts import load_prompt_set
from koed_core.rating.studies import attention_instruction


def _form(lang: str) -> None:
    from components.rating.rating_view import rubric_form
    from koed_core import i18n

    i18n.set_language(lang)
    rubric_form("t", lang)  # type: ignore[arg-type]


def test_the_rating_form_says_which_end_is_best_and_shows_every_anchor() -> None:
    for lang, said in (
        ("ko", "1점(가장 낮음)부터 5점(가장 높음)"),
        ("en", "1 (lowest) to 5 (highest)"),
    ):
        at = AppTest.from_function(_form, kwargs={"lang": lang}).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(said in m.value for m in at.markdown), lang
        for radio, dim in zip(at.radio, dimensions(), strict=True):
            captions = list(radio.proto.captions)
            assert len(captions) == 5
            assert dim.anchor(1, lang)[:10] in captions[0].replace("\\", "")  # type: ignore[arg-type]
            assert not radio.help  # nothing hidden in a tooltip


def test_an_attention_check_says_the_replys_content_does_not_matter() -> None:
    said = attention_instruction(4)
    assert "응답 내용과 관계없이" in said and "주의력 확인 문항" in said
    assert "whatever the reply says" in said and "choose 4 on every dimension" in said


def test_label_glosses_name_the_feeling_and_the_native_prompts_keep_theirs() -> None:
    assert gloss("faithful") == "신의를 지키는" and gloss("disgusted") == "역겨움을 느끼는"
    assert gloss("excited") == "들뜬" and gloss("trusting") == "신뢰하는"
    native = load_prompt_set("native").labels("ko")
    assert "faithful(충실한)" in native and "disgusted(역겨운)" in native  # as runs were made
    parsed = parse_reply("감정: 들뜬\n응답: 좋겠다!", "single", "extended")
    assert parsed.labels == ("excited",)


def test_the_rubric_and_label_files_carry_new_versions() -> None:
    import json

    from koed_core.paths import DATA_DIR

    assert json.loads((DATA_DIR / "rubric.json").read_text(encoding="utf-8"))["version"] == 3
    assert json.loads((DATA_DIR / "labels.json").read_text(encoding="utf-8"))["version"] == 2
    assert json.loads((DATA_DIR / "attention.json").read_text(encoding="utf-8"))["version"] == 2
    assert json.loads((DATA_DIR / "consent.json").read_text(encoding="utf-8"))["version"] == 2
    assert list((DATA_DIR / "rubric_history").glob("*.json"))  # the text older ratings carry


def _check(lang: str) -> None:
    from components.rating.rating_view import render_check
    from koed_core import i18n
    from koed_core.rating.studies import attention_instruction

    i18n.set_language(lang)
    render_check(attention_instruction(3))


def test_an_attention_check_is_said_in_the_readers_language_only() -> None:
    """A check stores its instruction in both languages; a Korean reader read an English
    sentence after the Korean one (issue 67 item 6, the native reader's pass)."""
    for lang, wanted, foreign in (
        ("ko", "주의력 확인 문항", "Attention check"),
        ("en", "Attention check", "주의력 확인"),
    ):
        at = AppTest.from_function(_check, kwargs={"lang": lang}).run()
        shown = at.warning[0].value
        assert wanted in shown and "3" in shown and foreign not in shown, shown
