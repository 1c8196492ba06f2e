"""The database layer: a 0.1.0 database upgrades in place with nothing lost; opening
checks the file; new files are owner-only."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from koed_core.db import JudgeConfig, Judgments, Runs, Store, StoreError, migrations
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.judge.rubric import rubric_version
from koed_core.models.client import Completion
from koed_core.models.registry import ModelSpec
from koed_core.paths import SAMPLE_FILE

FIXTURE = Path(__file__).parent / "data" / "koed-0.1.0.db"
COUNTS_0_1_0 = {
    "runs": 2,
    "responses": 16,
    "emotion_scores": 8,
    "judgments": 123,
    "raters": 3,
    "studies": 1,
    "study_items": 17,
    "assignments": 18,
    "ratings": 75,
}


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE, path)
    return path


def _raw(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def test_the_fixture_is_a_0_1_0_database() -> None:
    assert _raw(FIXTURE, "pragma user_version") == [(1,)]
    tables = {r[0] for r in _raw(FIXTURE, "select name from sqlite_master where type='table'")}
    assert migrations.TABLE not in tables and set(COUNTS_0_1_0) <= tables


def test_upgrade_in_place_keeps_every_row(old_db: Path) -> None:
    before = {t: _raw(old_db, f"select * from [{t}] order by rowid") for t in COUNTS_0_1_0}
    store = Store(old_db)
    assert migrations.applied(store.db) == [name for name, _ in migrations.MIGRATIONS]
    assert _raw(old_db, "pragma user_version") == [(len(migrations.MIGRATIONS),)]
    for table, count in COUNTS_0_1_0.items():
        assert store.count(table) == count, table
        after = _raw(old_db, f"select * from [{table}] order by rowid")
        width = len(before[table][0])
        if table == "ratings":  # rebuilt with the per-study key: same rows, same order
            assert [row[:width] for row in after] == before[table]
        else:  # new columns are appended; the old ones are untouched
            assert [row[:width] for row in after] == before[table], table
    sha = load_dataset(SAMPLE_FILE).sha256
    assert {r[0] for r in _raw(old_db, "select dataset_sha256 from runs")} == {sha}
    versions = dict(_raw(old_db, "select distinct prompt_version, rubric_version from judgments"))
    assert versions == {
        migrations.JUDGE_PROMPT_0_1_0: migrations.RUBRIC_0_1_0,
        "oldversion00": "unknown",
    }


def test_reopening_is_a_no_op_and_judge_configurations_are_told_apart(old_db: Path) -> None:
    Store(old_db)
    store = Store(old_db)
    assert len(migrations.applied(store.db)) == len(migrations.MIGRATIONS)
    configs = {u.config for u in Judgments(store).configs()}
    assert configs == {
        JudgeConfig("gpt-4o", "paper", migrations.JUDGE_PROMPT_0_1_0, migrations.RUBRIC_0_1_0),
        JudgeConfig("judge-b", "paper", migrations.JUDGE_PROMPT_0_1_0, migrations.RUBRIC_0_1_0),
        JudgeConfig("gpt-4o", "paper", "oldversion00", "unknown"),
    }


class _Never:
    name = "never"
    max_concurrency = 1

    def complete(self, messages: object, settings: object, task: object) -> Completion:
        raise AssertionError("a judgment stored by 0.1.0 was asked again")

    def stream(self, messages: object, settings: object, task: object) -> object:
        raise AssertionError("not used")


def test_judging_resumes_across_the_upgrade(old_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.1.0 judged run 9d35... with gpt-4o: under the same templates and rubric (as 0.1.0
    # had them), the upgraded database skips all of it; the keys survived the migration.
    import koed_core.judge.request as request  # where a judge configuration is made

    monkeypatch.setattr(
        request, "judge_prompt_version", lambda _template: migrations.JUDGE_PROMPT_0_1_0
    )
    monkeypatch.setattr(request, "rubric_version", lambda: migrations.RUBRIC_0_1_0)
    assert rubric_version() != migrations.RUBRIC_0_1_0  # today's rubric was re-anchored
    store = Store(old_db)
    run_id = "9d350d301481ea01a307"
    spec = ModelSpec(name="gpt-4o", backend="openai", model="gpt-4o")
    # the template and the parser 0.1.0 used (today's paper default is the authors')
    report = judge_run(
        store,
        _Never(),
        spec,
        JudgeRequest(run_id, judge=spec.name, mode="paper", template="fenced", parse="lenient"),
    )
    assert report.planned == report.skipped == 40 and report.failed == 0
    from koed_core.db import Judgments

    # m009: an earlier judgment is of the fenced template, read leniently (JSON if strict)
    steps = {(u.config.mode, u.config.template, u.config.parse) for u in Judgments(store).configs()}
    assert steps and steps <= {("paper", "fenced", "lenient"), ("strict", "fenced", "json")}
    # m014: every earlier judgment is the first judging (replicate 0); asking again is a
    # source of its own, with nothing of the earlier pass counted as done for it
    upgraded = Judgments(store).configs()
    assert upgraded and {u.config.replicate for u in upgraded} == {0}
    first = upgraded[0].config
    assert Judgments(store).done(first)
    assert not Judgments(store).done(dataclasses.replace(first, replicate=1))


def test_a_newer_database_is_refused(old_db: Path) -> None:
    Store(old_db)
    with sqlite3.connect(old_db) as conn:
        conn.execute(f"insert into {migrations.TABLE} values ('m999_future', 'later')")
    with pytest.raises(StoreError, match="newer KoED Studio"):
        Store(old_db)


def test_a_damaged_file_is_reported_and_left_untouched(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        Store(garbage)
    assert garbage.read_bytes() == b"this is not a database at all" * 100
    damaged = tmp_path / "damaged.db"
    shutil.copy(FIXTURE, damaged)
    data = bytearray(damaged.read_bytes())
    page = 4096
    data[page * 3 : page * 3 + 200] = b"\xff" * 200  # a b-tree page in the middle
    damaged.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="damaged|not a usable"):
        Store(damaged)
    assert damaged.read_bytes() == bytes(data)


def test_a_new_database_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "koed.db"
    store = Store(path)
    store.db.execute("create table t (x)")  # something in the WAL too
    for file in path.parent.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name


def test_the_change_stamp_moves_with_numbers_from_any_connection(old_db: Path) -> None:
    """m007 on an old database: every change to a scored table, by another connection
    (the worker, the command line), moves the stamp; queue bookkeeping does not."""
    store = Store(old_db)
    before = store.stamp()
    other = sqlite3.connect(old_db)
    other.execute("update ratings set score = score where rowid = 1")
    other.commit()
    assert store.stamp() == before + 1
    other.execute("delete from judgments where rowid = 1")
    other.execute("insert into jobs (kind, label, params) values ('run', 'r', '{}')")
    other.commit()
    assert store.stamp() == before + 2
    other.close()


def test_an_old_database_takes_episodes(old_db: Path) -> None:
    """m010 on a 0.1.0 database: its answers are single replies (no turn); an episode's
    Speaker turn can be stored beside them and moves the change stamp; an old run's id
    and its resume are unchanged (the episode fields are left out of its hash)."""
    from koed_core.db.episodes import Episodes, SpeakerRecord

    store = Store(old_db)
    assert _raw(old_db, "select count(*) from responses where turn is not null") == [(0,)]
    run_id = _raw(old_db, "select id from runs limit 1")[0][0]
    before = store.stamp()
    Episodes(store).save_speaker(
        SpeakerRecord(run_id, "c1", "ko", 1, 1, raw="응.", text="응.", kept=True)
    )
    assert store.stamp() > before
    assert Episodes(store).speaker_rows(run_id)[0]["text"] == "응."
    config, _ = Runs(store).run_config(run_id)  # type: ignore[misc]
    from koed_core.db import RunConfig

    assert RunConfig.from_stored(config).run_id == run_id


def test_a_crowd_study_from_0_3_upgrades_with_its_places_and_checks(tmp_path: Path) -> None:
    """m012 on a database made by the migrations before it (0.3): a worker under way gets
    a last activity from what was stored (so an idle hour frees their place at once), and
    every told check of that release keeps asking for 2, the score it showed."""
    import sqlite_utils

    from koed_core.db.crowd import Crowd
    from koed_core.rating.studies import check_verdicts

    path = tmp_path / "0.3.db"
    db = sqlite_utils.Database(path)
    for name, fn in migrations.MIGRATIONS:
        if name.startswith("m012"):
            break
        fn(db)
        migrations.record(db, name)
    db.execute(
        "insert into crowd_workers (username, invite_id, study_id, platform, worker_id, "
        "status, created, consented_at) values ('crowd-a', 'inv', 1, 'prolific', 'p1', "
        "'screening', '2026-01-01T10:00:00+00:00', '2026-01-01T10:05:00+00:00')"
    )
    for item, instruction in (("told", "choose 2 on every dimension"), ("untold", None)):
        db.execute(
            "insert into study_items (id, study_id, kind, conv_id, lang, context, response, "
            "instruction) values (?, 1, 'attention', 'c1', 'en', '[]', 'Whatever.', ?)",
            [item, instruction],
        )
    db.conn.commit()
    db.close()

    store = Store(path)
    crowd = Crowd(store)
    assert crowd.last_activity("crowd-a") == "2026-01-01T10:05:00+00:00"
    assert crowd.places_used("inv", "2026-01-01T10:04:00+00:00") == 1
    assert crowd.places_used("inv", "2026-01-01T11:00:00+00:00") == 0  # idle past it
    assert _raw(path, "select id, instructed_score from study_items order by id") == [
        ("told", 2),
        ("untold", None),
    ]
    rows = [
        {"item_id": "told", "dimension": "ER", "score": 2, "instruction": "x",
         "instructed_score": 2},
        {"item_id": "untold", "dimension": "ER", "score": 2, "instruction": None,
         "instructed_score": None},
    ]  # fmt: skip
    assert check_verdicts(rows) == {"told": (True, True), "untold": (False, True)}


def test_responses_from_0_3_upgrade_to_the_reply_cap_as_whole_answers(tmp_path: Path) -> None:
    """m013 on a 0.3 database: every stored answer came whole, so its cut columns are
    null, and a new answer cut at the cap is stored beside it with both figures."""
    import sqlite_utils

    path = tmp_path / "0.3.db"
    db = sqlite_utils.Database(path)
    for name, fn in migrations.MIGRATIONS:
        if name.startswith("m013"):
            break
        fn(db)
        migrations.record(db, name)
    db.execute(
        "insert into responses (id, run_id, conv_id, lang, context_hash, prompt, context, "
        "raw, text) values ('old', 'r', 'c1', 'ko', 'h', '[]', '[]', '응.', '응.')"
    )
    db.conn.commit()
    db.close()
    Store(path)
    assert _raw(path, "select id, cut_at, full_chars from responses") == [("old", None, None)]


def test_spans_from_0_4_upgrade_with_an_empty_comment_and_take_one(tmp_path: Path) -> None:
    """m018 on a database made by the migrations before it (0.4): a span stored then
    reads back unchanged with no comment (''), and a comment saved after the upgrade
    reads back."""
    import json

    import sqlite_utils

    from koed_core.annotation.projects import AnnotationRules
    from koed_core.annotation.taxonomy import load_taxonomy
    from koed_core.db.annotations import annotation_id

    dataset = load_dataset(SAMPLE_FILE)
    dialogue = dataset.dialogues[0]
    word = dialogue.turns[0].ko[:2]
    taxonomy = load_taxonomy()
    path = tmp_path / "0.4.db"
    db = sqlite_utils.Database(path)
    for name, fn in migrations.MIGRATIONS:
        if name.startswith("m018"):
            break
        fn(db)
        migrations.record(db, name)
    assert "comment" not in db["annotation_spans"].columns_dict
    db.execute(
        "insert into annotation_taxonomies (version, name, types) values (?, ?, ?)",
        [taxonomy.version, taxonomy.name, json.dumps(taxonomy.as_rows())],
    )
    db.execute(
        "insert into annotation_projects (id, name, dataset_sha256, conv_ids, taxonomy_version) "
        "values (1, 'p', ?, ?, ?)",
        [dataset.sha256, json.dumps([dialogue.conv_id]), taxonomy.version],
    )
    db.execute(
        "insert into annotations (id, project_id, conv_id, annotator, kind, status, "
        "taxonomy_version) values (?, 1, ?, 'alice', 'annotator', 'draft', ?)",
        [
            annotation_id(1, dialogue.conv_id, "alice", "annotator"),
            dialogue.conv_id,
            taxonomy.version,
        ],  # fmt: skip
    )
    db.execute(
        "insert into annotation_spans (id, annotation_id, position, start, [end], text, type, "
        "no_counterpart) values ('s1', ?, 1, 0, 2, ?, ?, 1)",
        [annotation_id(1, dialogue.conv_id, "alice", "annotator"), word, taxonomy.codes[0]],
    )
    db.conn.commit()
    db.close()

    upgraded = AnnotationRules(Store(path))
    own = upgraded.own(1, dialogue.conv_id, "alice")
    assert own is not None
    (span,) = own.spans
    assert (span.ko.text, span.type, span.comment) == (word, taxonomy.codes[0], "")
    upgraded.save(1, dialogue, "alice", None, "", [replace(span, comment="왜 이 유형?")])
    again = upgraded.own(1, dialogue.conv_id, "alice")
    assert again is not None and again.spans[0].comment == "왜 이 유형?"


def test_judgments_from_0_1_0_take_their_modes_temperature_and_keep_their_source(
    old_db: Path,
) -> None:
    """m025: every earlier judgment was asked at its mode's temperature (paper 0.7,
    strict 0), so it reads as that, under the configuration it had; a judge asked at
    another temperature is a source of its own."""
    store = Store(old_db)
    by_mode = dict(_raw(old_db, "select distinct mode, temperature from judgments"))
    assert by_mode and all(by_mode[m] == {"paper": 0.7, "strict": 0.0}[m] for m in by_mode)
    upgraded = Judgments(store).configs()
    first = upgraded[0].config
    assert first.temperature == 0.7 and first == replace(first, temperature=None)
    assert Judgments(store).done(first)
    assert not Judgments(store).done(replace(first, temperature=0.0))
    assert "T=0" in replace(first, temperature=0.0).label and "T=" not in first.label
    asked = JudgeRequest("r", judge="gpt-4o", temperature=0.0)
    assert (
        asked.config().temperature == 0.0 != JudgeRequest("r", judge="gpt-4o").config().temperature
    )


def test_item_claims_from_before_m026_upgrade_to_item_locks_still_held(tmp_path: Path) -> None:
    """m026 on a database made by the migrations before it: the table of locked items
    (``response_claims``) is ``item_locks``, its rows kept, and the pass that held an
    item before the upgrade still holds it after."""
    import sqlite_utils

    from koed_core.db.item_locks import ItemLocks

    path = tmp_path / "0.9.db"
    db = sqlite_utils.Database(path)
    for name, fn in migrations.MIGRATIONS:
        if name.startswith("m026"):
            break
        fn(db)
        migrations.record(db, name)
    db.execute(
        "insert into response_claims (response_id, run_id, owner, claimed) "
        "values ('item-1', 'run', 'elsewhere:1#pass', 9e12)"
    )
    db.conn.commit()
    db.close()

    store = Store(path)
    tables = {r[0] for r in _raw(path, "select name from sqlite_master where type='table'")}
    assert "item_locks" in tables and "response_claims" not in tables
    assert _raw(path, "select response_id, run_id, owner, locked from item_locks") == [
        ("item-1", "run", "elsewhere:1#pass", 9e12)
    ]
    assert not ItemLocks(store).lock_item("run", "item-1", "here:2#other")  # still held
    indexes = {r[0] for r in _raw(path, "select name from sqlite_master where type='index'")}
    assert "item_locks_run" in indexes and "response_claims_run" not in indexes
