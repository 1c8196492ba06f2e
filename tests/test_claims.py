"""The paper's claims as data, decided on planted gaps that make each hold, fail, or stay
undecided."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import JudgeConfig
from koed_core.results import claims

JUDGE = JudgeConfig("gpt-4o", "paper", "p1", "r1", "authors", "authors")
RUNS = {("llama", "single"): "run-l", ("exaone-3.0-7.8b", "single"): "run-x"}


def _frame(
    ko_minus_en: dict[str, float], ca_ko: dict[str, float], noise: float = 0.1
) -> pd.DataFrame:
    """Judge scores of 40 dialogues per run: English around 3, Korean moved by the planted
    gap; CA in Korean set per run."""
    rng = np.random.default_rng(1)
    rows = []
    for run, gap in ko_minus_en.items():
        for n in range(40):
            for metric in ("EX", "IP", "ER", "EEA", "CA"):
                en = 3 + rng.normal(0, noise)
                ko = en + gap + rng.normal(0, noise)
                if metric == "CA":
                    ko = ca_ko[run] + rng.normal(0, noise)
                for lang, value in (("en", en), ("ko", ko)):
                    rows.append(
                        {
                            "run_id": run,
                            "conv_id": f"c{n}",
                            "lang": lang,
                            "metric": metric,
                            "value": value,
                            "source": "judge",
                        }
                    )
    return pd.DataFrame(rows)


def _status(frame: pd.DataFrame, runs: dict[tuple[str, str], str] = RUNS) -> dict[str, str]:
    return {v.claim.key: v.status for v in claims.check(claims.load_claims(), frame, runs, JUDGE)}


def test_the_shipped_claims_hold_on_a_reproduction_that_matches_the_paper() -> None:
    found = claims.check(
        claims.load_claims(),
        _frame({"run-l": -0.6, "run-x": -0.4}, {"run-l": 2.0, "run-x": 2.6}),
        RUNS,
        JUDGE,
        {"llama": "weights as its server runs them"},
    )
    assert {v.claim.key: v.status for v in found} == {
        "lower-on-koed": claims.HOLDS,
        "jeong-han": claims.UNDECIDED,  # no dialogue of the planted frame is jeong/han
        "exaone-ca": claims.HOLDS,
    }
    lower = found[0]
    assert lower.claim.abstract == "models consistently underperform on KoED compared to ED"
    assert lower.runs == ("run-l", "run-x") and lower.judge == JUDGE.label
    assert lower.numbers[0] == "all 10 gaps lie below 0"
    assert lower.notes == ("llama: weights as its server runs them",)
    text = claims.to_markdown(found, "aa49" * 16)
    assert "HOLDS" in text and "exaone-3.0-7.8b - llama (single, CA, ko)" in text
    assert f"Dataset sha256: {'aa49' * 16}" in text  # every number names its data


@pytest.mark.slow
def test_each_claim_fails_where_the_planted_numbers_contradict_it() -> None:
    status = _status(_frame({"run-l": 0.5, "run-x": -0.4}, {"run-l": 3.0, "run-x": 2.0}))
    assert status == {
        "lower-on-koed": claims.FAILS,
        "jeong-han": claims.UNDECIDED,
        "exaone-ca": claims.FAILS,
    }


@pytest.mark.slow
def test_a_claim_the_runs_cannot_decide_is_undecided_never_assumed() -> None:
    noisy = _frame({"run-l": 0.0, "run-x": -0.5}, {"run-l": 2.5, "run-x": 2.5}, noise=0.5)
    assert set(_status(noisy).values()) == {claims.UNDECIDED}
    without = {("llama", "single"): "run-l"}
    assert _status(noisy, without)["exaone-ca"] == claims.UNDECIDED
    assert set(_status(noisy.iloc[0:0]).values()) == {claims.UNDECIDED}


def test_a_claims_file_with_an_unknown_test_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "claims.toml"
    bad.write_text('[claims.x]\ntext = "Something."\ntest = "vibes"\n')
    with pytest.raises(claims.ClaimsError, match="test must be one of"):
        claims.load_claims(bad)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('test = "every_gap_below_zero"\nmetrics = 5\n', "metrics must be a list of names"),
        ('test = "every_gap_below_zero"\nmetrics = []\n', "metrics must be a list of names"),
        ('test = "model_ranks_first"\nmetric = "CA"\n', "model must be a name"),
        ('test = "model_ranks_first"\nmodel = "x"\nmetric = "CA"\nlang = "fr"\n', "lang must be"),
    ],
)
def test_a_claims_file_with_settings_of_the_wrong_kind_is_one_sentence(
    tmp_path: Path, body: str, said: str
) -> None:
    bad = tmp_path / "claims.toml"
    bad.write_text('[claims.x]\ntext = "Something."\n' + body)
    with pytest.raises(claims.ClaimsError, match=said):
        claims.load_claims(bad)


def test_reproduce_refuses_a_bad_claims_file_before_sending_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from koed_core.cli import main
    from koed_core.paths import SAMPLE_FILE

    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "small"\nmodels = ["openai:a"]\njudge = "gpt-4o"\nsubset = "full"\n'
        'protocols = ["single"]\n'
    )
    bad = tmp_path / "claims.toml"
    bad.write_text("[claims.x]\ntext = 'x'\ntest = 'vibes'\n")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing may be called
    code = main(["reproduce", str(plan), "--data", str(SAMPLE_FILE), "--claims", str(bad)])
    assert code != 0
    err = capsys.readouterr().err
    assert "test must be one of" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_substitution_is_said_only_when_the_stored_run_says_one_ran(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """An entry that merely *has* substitutes ran as the paper's id, so no
    claim may say it was substituted; the same entry run as its substitute is said."""
    from tests.test_reproduce import _setup, koed_reproduce, run

    plan, env = _setup(tmp_path, fake_openai)
    fake_openai.served = ["m-one", "m-two", "m-two-2025", "judge-x"]
    plan.write_text(
        plan.read_text()
        .replace('models = ["m-one", "m-two", "m-three", "m-four", "m-five"]', "")
        .replace("sample = 3", 'sample = 2\nmodels = ["m-one", "m-two"]\nprotocols = ["single"]')
    )
    registry = Path(env["KOED_MODELS"])
    registry.write_text(
        registry.read_text().replace(
            'model = "m-two"\n', 'model = "m-two"\nsubstitutes = ["m-two-2025"]\n'
        )
    )
    out = tmp_path / "out"
    command = koed_reproduce(plan, out)
    done = run([*command, "--claims"], env)
    assert done.returncode == 0, done.stderr
    said = (out / "claims.md").read_text()
    assert "substitut" not in said and "retired" not in said
    registry.write_text(registry.read_text().replace('model = "m-two"\n', 'model = "m-two-2025"\n'))
    again = run([*command, "--claims"], env)
    assert again.returncode == 0, again.stderr
    said = (out / "claims.md").read_text()
    assert "m-two: substituted: ran m-two-2025" in said


@pytest.mark.slow
def test_one_interval_above_zero_by_chance_does_not_flip_a_true_claim() -> None:
    """49 of 50 gaps below 0 and one interval above 0 whose one-sided p
    (0.01) does not survive Holm over 50: undecided, not "does not hold"; a contradiction
    that survives (p 0.0001) does flip it."""
    numbers = [f"gap {n}" for n in range(50)]
    chance = [1.0] * 49 + [0.01]
    assert claims._decide(49, chance, numbers, "below", "above")[0] == claims.UNDECIDED
    strong = [1.0] * 49 + [0.0001]
    assert claims._decide(49, strong, numbers, "below", "above")[0] == claims.FAILS
    assert claims._decide(50, strong, numbers, "below", "above")[0] == claims.HOLDS


def test_the_jeong_han_claim_is_decided_and_the_abstract_quoted() -> None:
    """The abstract's "especially with uniquely Korean emotional expressions",
    decided on a planted wider gap on jeong/han dialogues; the report quotes the abstract
    beside our wording and states its decision rule."""
    frame = _frame({"run-l": -0.6, "run-x": -0.4}, {"run-l": 2.0, "run-x": 2.6})
    jeong = frame["conv_id"].isin([f"c{n}" for n in range(20)]) & (frame["lang"] == "ko")
    frame.loc[jeong & (frame["metric"] != "CA"), "value"] -= 1.0
    frame.loc[jeong & (frame["metric"] == "CA"), "value"] -= 1.0
    groups = {f"c{n}": "jeong/han" if n < 20 else "other labels" for n in range(40)}
    found = claims.check(claims.load_claims(), frame, RUNS, JUDGE, None, groups)
    verdicts = {v.claim.key: v for v in found}
    assert verdicts["jeong-han"].status == claims.HOLDS
    text = claims.to_markdown(found)
    assert "\u201cstruggling especially with uniquely Korean emotional expressions\u201d" in text
    assert "Holm" in text and "intersection-union" in text


def test_the_bundle_cites_the_paper_with_doi_and_pages_and_the_readme_its_full_title() -> None:
    """The export's citation and the README's title."""
    from koed_core.results.paper_export import _readme

    said = _readme()
    assert "doi:10.18653/v1/2025.ijcnlp-long.44" in said and "pages 791-809" in said
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    title = (
        "Multilingual, Not Multicultural: Uncovering the Cultural Empathy Gap in LLMs "
        "through a Comparative Empathetic Dialogue Benchmark"
    )
    assert title in " ".join(readme.split())


@pytest.mark.slow
def test_an_interval_on_the_wrong_side_is_never_said_to_include_zero() -> None:
    """Issue 64 #4: a gap of about +0.2 whose interval lies above 0 but whose p-value does
    not survive Holm over the claim's 10 intervals left the claim undecided, and the line
    said "1 of 10 CIs include 0" of an interval like [+0.03, +0.41]."""
    frame = _frame({"run-l": -0.6, "run-x": -0.6}, {"run-l": 2.0, "run-x": 2.6}, noise=0.0)
    cell = (frame["run_id"] == "run-l") & (frame["metric"] == "EX") & (frame["lang"] == "ko")
    steps = np.array([0.22 + (0.6 if n % 2 else -0.6) for n in range(40)])
    frame.loc[cell, "value"] = 3.0 + steps
    [verdict] = [v for v in claims.check(claims.load_claims(), frame, RUNS, JUDGE) if
                 v.claim.key == "lower-on-koed"]  # fmt: skip
    assert verdict.status == claims.UNDECIDED
    line = next(n for n in verdict.numbers if "llama single EX" in n)
    low = float(line.split("[")[1].split(",")[0])
    assert low > 0  # the planted interval lies above 0 ...
    assert "include 0" not in verdict.numbers[0]  # ... so it is not said to include 0
    assert "1 of 10" in verdict.numbers[0] and "other side of 0" in verdict.numbers[0]


def test_a_paper_model_served_under_another_id_is_said_beside_its_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 64 #1: EXAONE, Llama and Qwen served under other ids (an OpenAI-compatible
    server's own names) ran with no word in claims.md; any run whose stored model id is
    not the id the KoED authors ran is named beside every verdict using it."""
    from koed_core.models.registry import ModelSpec

    stored = {
        "run-x": {"model_id": "exaone-3.5-local", "family": "open", "backend": "openai"},
        "run-l": {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "family": "open",
                  "backend": "openai"},
    }  # fmt: skip
    monkeypatch.setattr(
        claims.Runs, "run_config", lambda self, run_id: (stored[run_id], None), raising=True
    )
    specs = {
        "exaone-3.0-7.8b": ModelSpec(
            name="exaone-3.0-7.8b", backend="openai", model="LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct"
        ),
        "llama": ModelSpec(
            name="llama", backend="openai", model="meta-llama/Llama-3.1-8B-Instruct"
        ),
    }
    notes = claims.provenance_notes(None, RUNS, specs)
    assert "exaone-3.5-local" in notes["exaone-3.0-7.8b"]
    assert "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct" in notes["exaone-3.0-7.8b"]
    assert "exaone-3.5-local" not in notes["llama"]  # the paper's own id: weights only
    found = claims.check(
        claims.load_claims(),
        _frame({"run-l": -0.6, "run-x": -0.4}, {"run-l": 2.0, "run-x": 2.6}),
        RUNS,
        JUDGE,
        notes,
    )
    text = claims.to_markdown(found)
    assert "exaone-3.5-local" in text.split("Korean-centric EXAONE")[1]
