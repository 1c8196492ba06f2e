"""Language or culture, the last pieces (issue 65): the variant version in the Runs table,
whole-episode studies of variant episodes, and the four-cell plan's dry run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from koed_core.db import Runs, Store
from koed_core.db.variants import Variants
from tests.test_variant_studies import four_cell_run

ROOT = Path(__file__).resolve().parents[1]


def test_the_runs_table_names_the_variant_version_each_run_read(tmp_path: Path) -> None:
    """A run in a variant reads one version of it: the stored-runs table says which, on
    the variant's own row (ko and en rows name none)."""
    store = Store(tmp_path / "k.db")
    run_id = four_cell_run(store)
    versions = {v.variant: v for v in Variants(store).versions()}
    rows = Runs(store).runs()
    read = dict(zip(rows["lang"], rows["variant"], strict=True))
    assert read["ko-from-en"] == f"ko-from-en v1 · {versions['ko-from-en'].id}"
    assert read["en-from-ko"] == f"en-from-ko v1 · {versions['en-from-ko'].id}"
    assert pd.isna(read["ko"]) and pd.isna(read["en"])
    assert set(rows["run_id"]) == {run_id}


def test_the_runs_page_shows_the_variant_column_when_a_run_read_one(tmp_path: Path) -> None:
    from streamlit.testing.v1 import AppTest

    four_cell_run(Store(tmp_path / "koed.db"))  # KOED_DB (conftest)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "lang" in d.value.columns)
    assert list(table.columns[:3]) == ["run", "lang", "variant"]
    named = dict(zip(table["lang"], table["variant"], strict=True))
    assert named["en-from-ko"].startswith("en-from-ko v1 · ")
    assert named["ko-from-en"].startswith("ko-from-en v1 · ")
    assert " v" not in str(named["ko"]) and " v" not in str(named["en"])


