"""What moves the gap: a sensitivity plan against the scripted server recovers a change
planted in one step, and finds none where nothing changed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Store
from koed_core.judge import judging
from koed_core.paths import SAMPLE_FILE
from koed_core.results import sensitivity
from tests.test_reproduce import koed_reproduce, reproduce_env, run, scripted_models

ROOT = Path(__file__).resolve().parents[1]
SHORT = "That sounds really hard. Do you want to tell me more about it?"
EXTRA = "\n\nI am here for you, always."


def _score(text: str) -> int:
    """The scripted judge's verdict: it follows the judged reply's length."""
    return 1 + len(text.strip()) % 5


@pytest.mark.slow
def test_a_planted_post_processing_effect_is_recovered(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    # English replies carry a second paragraph: the authors' post-processing cuts it, so
    # their English scores differ from the whole reply's; Korean replies have none.
    fake_openai.extra = {"en": EXTRA}
    fake_openai.served = ["m-one", "judge-x"]
    registry = scripted_models(tmp_path / "models.toml", fake_openai.base_url, fake_openai.served)
    plan = tmp_path / "moved.toml"
    plan.write_text(
        'name = "moved"\nsubset = "full"\nsample = 4\nseed = 2\nprotocols = ["single"]\n'
        'models = ["m-one"]\njudge = "judge-x"\n'
        'postprocess = "authors"\n'  # their cut on the text: "none" then reads it again
        '[variants."post-processing: none"]\npostprocess = "none"\n'
        '[variants."emotion reader: extended"]\nemotion_reader = "extended"\n'
        '[variants."=HYPERLINK(lenient)"]\njudge_parse = "lenient"\n'
        f'[variants."{sensitivity.NOISE_FLOOR}"]\njudge_replicate = 1\n'
    )  # a variant's name is the plan author's text: it must reach a sheet as text
    env = reproduce_env(registry, tmp_path / "koed.db")  # the app's too (conftest)
    out = tmp_path / "out"
    done = run(koed_reproduce(plan, out), env)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "sensitivity.csv")
    assert set(table["variant"]) == {
        sensitivity.BASE,
        "post-processing: none",
        "emotion reader: extended",
        "'=HYPERLINK(lenient)",  # neutralised
        sensitivity.NOISE_FLOOR,
    }
    assert {p.stat().st_mode & 0o777 for p in out.glob("sensitivity.*")} == {0o600}
    planted = _score(SHORT) - _score(SHORT + EXTRA)
    assert planted != 0
    cut = table[(table["variant"] == "post-processing: none") & table["metric"].isin(["EX", "CA"])]
    assert len(cut) == 2 and (cut["change"] == planted).all()
    assert (cut["change_ci_low"] == planted).all() and (cut["change_ci_high"] == planted).all()
    assert (cut["change_p_holm"] < 0.05).all()  # planted: real after Holm's adjustment
    lenient = table[table["variant"] == "'=HYPERLINK(lenient)"]
    assert not lenient.empty and (lenient["change"] == 0).all()
    rubric_rows = lenient["metric"].isin(["EX", "IP", "ER", "EEA", "CA"])
    assert (lenient[rubric_rows]["change_p_holm"] == 1).all()  # nothing moved
    # its emotion numbers are the base run's own: zero by construction, not in the family
    assert lenient[~rubric_rows]["change_p_holm"].isna().all()
    assert "p (Holm)" in (out / "sensitivity.md").read_text()
    emotion = table[(table["metric"] == "emotion") & (table["variant"] != sensitivity.BASE)]
    assert (emotion["change"] == 0).all()  # the emotion answers did not change
    assert "what moves the gap" in (out / "sensitivity.md").read_text()
    # the noise floor: the base judged again by a deterministic judge moves nothing at all,
    # and is a source of its own (the base's verdicts are not averaged with it)
    floor = table[table["variant"] == sensitivity.NOISE_FLOOR]
    assert set(floor["metric"]) >= {"EX", "IP", "ER", "EEA", "CA"}
    rubric = floor[floor["metric"].isin(["EX", "IP", "ER", "EEA", "CA"])]
    assert (rubric["change"] == 0).all() and (rubric["judge_replicate"] == 1).all()
    assert (table[table["variant"] == sensitivity.BASE]["judge_replicate"].dropna() == 0).all()
    assert "judged a second time" in (out / "sensitivity.md").read_text()
    # the Gap page finds the same variants in the database without the plan
    store = Store(tmp_path / "koed.db")
    [(run_id, judge)] = sensitivity.bases(store)
    found = sensitivity.find_variants(store, run_id, judge)
    assert set(found) == {
        sensitivity.BASE,
        "post-processing: none",
        "emotion reader: extended",
        "judge parse: lenient",
        sensitivity.NOISE_FLOOR,
    }
    # the post-processing variant read the base's stored answers again: no listener call
    answered = store.db.execute("select count(*) from responses where run_id = ?", [run_id])
    assert sum(r["model"] == "m-one" for r in fake_openai.requests) == 2 * answered.fetchone()[0]
    # judge calls: the base's texts once; of the post-processing variant only the
    # English replies, which it judges cut differently; none for the emotion reader, whose
    # judged texts are byte-identical to the base's (its verdicts are the base's, not a
    # resample), nor for the parser variant, which reads the judge's stored replies again
    langs = "select lang, count(*) from responses where run_id = ? group by lang"
    per_lang = dict(store.db.execute(langs, [run_id]).fetchall())
    calls = sum(r["model"] == "judge-x" for r in fake_openai.requests)
    # ... and the noise floor asks about every base text once more
    assert calls == 2 * 5 * (per_lang["ko"] + per_lang["en"]) + 5 * per_lang["en"]
    lenient = found["judge parse: lenient"].judge
    reread = store.db.execute(
        "select count(*) from judgments where parse = ? and raw_reply is not null",
        [lenient.parse],
    ).fetchone()[0]
    assert reread == 5 * (per_lang["ko"] + per_lang["en"])
    reader = table[table["variant"] == "emotion reader: extended"]
    assert (reader[reader["metric"] != "emotion"]["change"] == 0).all()
    other = found["post-processing: none"].run_id
    raws = "select conv_id, lang, raw from responses where run_id = ? order by 1, 2"
    assert list(store.db.execute(raws, [other])) == list(store.db.execute(raws, [run_id]))
    # ... and draws it: a bar per variant, the table beside it
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at = at.switch_page("app_pages/results/gap.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [e for e in at.expander if e.label.startswith("What moves the gap")]
    assert shown
    [moved] = [d.value for d in at.dataframe if "variant" in d.value.columns]
    assert set(moved["variant"]) == set(found)
    cut_shown = moved[moved["variant"] == "post-processing: none"]["change"].astype(float)
    assert (cut_shown == planted).sum() == 5  # the five dimensions; emotion did not move


@pytest.mark.slow
def test_each_change_has_a_bootstrap_p_and_holm_adjusts_over_its_table() -> None:
    """About 49 intervals were shown with no word on multiple comparisons."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    before = rng.normal(size=60)
    assert sensitivity.change_p(before, before) == 1.0  # no change at all
    assert sensitivity.change_p(before, before + 1.0) == 0.0  # every resample moved
    noisy = sensitivity.change_p(before, before + rng.normal(0.05, 1.0, size=60))
    assert noisy is not None and 0 < noisy < 1
    assert sensitivity.change_p(before[:1], before[:1] + 1) is None  # one pair: no CI, no p
    frame = pd.DataFrame(
        {
            "model": ["m", "m", "m", "n"],
            "protocol": ["single"] * 4,
            "change_p": [0.01, 0.04, None, 0.04],
        }
    )
    adjusted = sensitivity._holm(frame)["change_p_holm"]
    expected = multipletests([0.01, 0.04], method="holm")[1]
    assert list(adjusted[:2]) == pytest.approx(list(expected))
    assert adjusted[2] is None and adjusted[3] == pytest.approx(0.04)  # its own family


def _plan(
    tmp_path: Path, server: FakeOpenAI, variants: str, sample: int = 2
) -> tuple[list[str], dict[str, str]]:
    """A one-model sensitivity plan on the scripted server: the command and environment."""
    server.served = ["m-one", "judge-x"]
    registry = scripted_models(tmp_path / "models.toml", server.base_url, server.served)
    plan = tmp_path / "moved.toml"
    plan.write_text(
        f'name = "moved"\nsubset = "full"\nsample = {sample}\nseed = 2\n'
        'protocols = ["single"]\nmodels = ["m-one"]\njudge = "judge-x"\n' + variants
    )
    return koed_reproduce(plan), reproduce_env(registry, tmp_path / "k.db")


@pytest.mark.slow
def test_a_variant_with_every_verdict_unscored_keeps_its_rows(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """Every variant x metric has a row; an empty one says why."""
    fake_openai.reply_fn = lambda body: (
        "I would rather not give a number."
        if body["messages"][0]["content"].startswith("You evaluate")
        else None
    )
    command, env = _plan(
        tmp_path, fake_openai, '[variants."judge template: fenced"]\njudge_template = "fenced"\n'
    )
    out = tmp_path / "out"
    done = run([*command, "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "sensitivity.csv")
    fenced = table[table["variant"] == "judge template: fenced"]
    rubric = fenced[fenced["metric"].isin(["EX", "IP", "ER", "EEA", "CA"])]
    assert len(rubric) == 5 and (rubric["pairs"] == 0).all()
    store = Store(tmp_path / "k.db")
    answered = store.db.execute("select count(*) from responses").fetchone()[0]
    assert set(rubric["note"]) == {f"no scored pairs ({answered} unscored)"}
    said = (out / "sensitivity.md").read_text()
    assert said.count(f"no scored pairs ({answered} unscored)") == 5


def _off_scale_ex(body: dict[str, object]) -> str | None:
    """The judge gives EX a 7 (off the scale) and the other dimensions a 3."""
    messages = body["messages"]
    assert isinstance(messages, list)
    if "Empathetic response:\nListener: " not in messages[-1]["content"]:
        return None
    return f"Feedback: fine.\nScore: {7 if '(EX)' in messages[0]['content'] else 3}"


@pytest.mark.slow
def test_the_parser_variant_reads_again_and_never_asks(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The authors' parser keeps a 7 unscored without asking again; the
    lenient one would ask again. The variant re-reads only: no judge call, the task left
    unscored and saying why; the dry run's 0 judge calls is then true."""
    fake_openai.reply_fn = _off_scale_ex
    command, env = _plan(
        tmp_path, fake_openai, '[variants."judge parse: lenient"]\njudge_parse = "lenient"\n'
    )
    dry = run([*command, "--dry-run"], env)
    assert "judge parse: lenient: 0 listener, 0 judge" in dry.stdout
    done = run(command, env)
    assert done.returncode == 0, done.stderr
    store = Store(tmp_path / "k.db")
    answered = store.db.execute("select count(*) from responses").fetchone()[0]
    calls = sum(r["model"] == "judge-x" for r in fake_openai.requests)
    assert calls == 5 * answered  # the base's one attempt per dimension, nothing more
    reasons = {
        r[0]
        for r in store.db.execute(
            "select unscored_reason from judgments where parse = 'lenient' and dimension = 'EX'"
        )
    }
    assert reasons and all(r.endswith(judging.REREAD_ONLY) for r in reasons)


def test_the_shipped_sensitivity_plan_shows_what_the_repr_moves() -> None:
    """EXAONE's base takes their literal path (authors-repr); one variant
    changes it alone to their cut on the text, a run of its own (the reply call moves)."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.registry import load_registry
    from koed_core.paths import DEFAULT_REGISTRY
    from koed_core.results.reproduce import load_plan, pinned, variant_calls

    plan = load_plan(ROOT / "plans" / "sensitivity.toml")
    registry = load_registry(DEFAULT_REGISTRY)
    specs = {m: registry[m] for m in plan.models}
    assert pinned(plan, specs).pipeline["postprocess"] == "authors-repr"
    [name] = [n for n, c in plan.variants.items() if c == {"postprocess": "authors"}]
    dialogues = load_dataset(SAMPLE_FILE).dialogues[:3]
    calls = {v.name: v for v in variant_calls(plan, specs, registry[plan.judge], dialogues)}
    assert calls[name].listener_calls > 0 and "reply call changes" in calls[name].why


@pytest.mark.slow
def test_byte_identical_requests_are_not_asked_again_and_the_base_runs_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The instruction-language variant sends its English requests byte for
    byte as the base did: they take the base's answers and verdicts, no call; "base, run
    again" re-samples the listener and the judge; a change zero by construction is left
    out of Holm's family."""
    command, env = _plan(
        tmp_path,
        fake_openai,
        '[variants."instruction language: Korean"]\nprompts = "paper-ko"\n'
        '[variants."emotion reader: extended"]\nemotion_reader = "extended"\n'
        f'[variants."{sensitivity.NOISE_FLOOR_RUN}"]\nrun_replicate = 1\n',
    )
    dry = run([*command, "--dry-run"], env)
    out = tmp_path / "out"
    done = run([*command, "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    store = Store(tmp_path / "k.db")
    per_lang = dict(
        store.db.execute(
            "select lang, count(distinct conv_id) from responses group by lang"
        ).fetchall()
    )
    listener = sum(r["model"] == "m-one" for r in fake_openai.requests)
    # the base and its replicate ask everything (two calls an item); paper-ko the Korean only
    items = per_lang["ko"] + per_lang["en"]
    assert listener == 2 * items + 2 * items + 2 * per_lang["ko"]
    assert f"instruction language: Korean: {2 * per_lang['ko']} listener" in dry.stdout
    judge = sum(r["model"] == "judge-x" for r in fake_openai.requests)
    assert judge == 5 * items + 5 * items + 5 * per_lang["ko"]
    table = pd.read_csv(out / "sensitivity.csv")
    assert sensitivity.NOISE_FLOOR_RUN in set(table["variant"])
    reader = table[
        (table["variant"] == "emotion reader: extended") & table["metric"].isin(["EX", "CA"])
    ]
    assert (reader["note"] == sensitivity.FIXED).all() and reader["change_p_holm"].isna().all()
    assert table[table["variant"] == sensitivity.NOISE_FLOOR_RUN]["change_p_holm"].notna().any()
