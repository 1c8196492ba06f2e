"""bench/*.py at its smoke size: the benches of group 'serve' (tests/bench_smoke/smoke.py says what each must print)."""

from __future__ import annotations

import pytest

from tests.bench_smoke.smoke import cases, check


@pytest.mark.parametrize("name", cases("serve"))
def test_the_bench_runs_small_and_prints_its_lines(name: str) -> None:
    check(name)
