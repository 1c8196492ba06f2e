"""`koed reproduce PLAN`: the paper's table from one command, resumable at every step.

A plan (TOML) names the models, protocols, languages, subset, prompt set and judge.
Before anything is sent, every model and the judge are checked (key present, server
answering); a model that fails is reported and left out, the others go on. Each model
then runs in its own thread at its own concurrency (models never wait on each other),
and each finished run is judged at once, overlapping the other models' runs. Runs and
judging are the same resumable batches as ``koed run`` and ``koed judge``: a killed
reproduction, started again, asks only what is not stored.

One module per step: ``plan`` (reading and checking the plan file), ``preflight``
(servers and the dry run's estimate), ``running`` (runs, judging, variants) and
``paper_tables`` (the paper's table and its Markdown and LaTeX forms).
"""

from koed_core.results.reproduce.paper_tables import paper_table, stored_runs, to_latex, to_markdown
from koed_core.results.reproduce.plan import (
    CHARS_PER_TOKEN,
    VARIANT_KEYS,
    Plan,
    PlanError,
    load_plan,
    parse_plan,
    pinned,
    plan_settings,
)
from koed_core.results.reproduce.preflight import (
    Estimate,
    Problem,
    check_reachable,
    check_served,
    estimate,
    variant_calls,
)
from koed_core.results.reproduce.running import FromBase, Outcome, Reached, StepHooks, reproduce

__all__ = [
    "CHARS_PER_TOKEN",
    "Estimate",
    "FromBase",
    "Outcome",
    "Reached",
    "StepHooks",
    "Plan",
    "PlanError",
    "Problem",
    "VARIANT_KEYS",
    "check_reachable",
    "check_served",
    "estimate",
    "load_plan",
    "paper_table",
    "parse_plan",
    "pinned",
    "plan_settings",
    "reproduce",
    "stored_runs",
    "to_latex",
    "to_markdown",
    "variant_calls",
]
