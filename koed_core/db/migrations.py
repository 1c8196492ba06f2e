"""The schema as numbered migrations, recorded in the database itself.

Each runs once, in order, in one transaction, recorded in ``_koed_migrations`` (simonw/llm's
pattern). A 0.1.0 database has no such table (its tables came from ``create table if not
exists``), so ``m001`` repeats those statements as a no-op. Never edit a shipped migration.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable

import sqlite_utils

from koed_core.db.migration_log import TABLE as TABLE
from koed_core.db.migration_log import applied as applied
from koed_core.db.migration_log import record as record
from koed_core.db.migration_log import run_script as _script

Migration = Callable[[sqlite_utils.Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []

# What 0.1.0's judge templates hashed to, and the rubric they quoted: a 0.1.0 judgment
# with that prompt version was made against that rubric. Any other version is unknown.
RUBRIC_0_1_0 = "609b741a25d2"
JUDGE_PROMPT_0_1_0 = "950b7728fa11"


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its name is its identity."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_initial(db: sqlite_utils.Database) -> None:
    """The tables of KoED Studio 0.1.0, as that release created them."""
    _script(
        db,
        """
        create table if not exists [runs] (
            [id] TEXT PRIMARY KEY, [name] TEXT, [kind] TEXT, [config] TEXT, [langs] TEXT,
            [created] TEXT, [updated] TEXT);
        create table if not exists [responses] (
            [id] TEXT PRIMARY KEY, [run_id] TEXT REFERENCES [runs]([id]), [conv_id] TEXT,
            [lang] TEXT, [context_hash] TEXT, [prompt] TEXT, [context] TEXT, [raw] TEXT,
            [text] TEXT, [predicted] TEXT, [unknown_labels] TEXT, [parse_notes] TEXT,
            [latency_s] FLOAT, [prompt_tokens] INTEGER, [completion_tokens] INTEGER,
            [error] TEXT, [error_kind] TEXT, [created] TEXT);
        create index if not exists [idx_responses_run_id_lang] on [responses] ([run_id], [lang]);
        create table if not exists [emotion_scores] (
            [response_id] TEXT PRIMARY KEY REFERENCES [responses]([id]), [gold] TEXT,
            [hit] INTEGER, [precision] FLOAT, [recall] FLOAT, [f1] FLOAT, [jaccard] FLOAT);
        create table if not exists judgments (
            id text primary key, response_id text, judge_model text,
            judge_backend text, mode text, prompt_version text, dimension text,
            sample integer, score real, unscored_reason text, rationale text,
            raw_prompt text, raw_reply text, error text, created text);
        create index if not exists judgments_response on judgments(response_id);
        create table if not exists raters (
            username text primary key, languages text, native_language text,
            years_korea real, years_english real, calibrated text, created text);
        create table if not exists studies (
            id integer primary key, name text, config text, rubric_version text,
            created text);
        create table if not exists study_items (
            id text primary key, study_id integer, response_id text, kind text,
            conv_id text, lang text, context text, response text, created text);
        create index if not exists study_items_study on study_items(study_id, lang);
        create table if not exists assignments (
            id text primary key, study_id integer, item_id text, username text,
            status text, assigned_at text, finished_at text, note text,
            unique(item_id, username));
        create index if not exists assignments_user on assignments(study_id, username);
        create table if not exists ratings (
            id text primary key, study_id integer, item_id text, response_key text,
            username text, dimension text, score integer, comment text,
            time_spent_s real, rubric_version text, created text, updated text,
            unique(response_key, username, dimension));
        """,
    )


@migration
def m002_provenance(db: sqlite_utils.Database) -> None:
    """Provenance as columns: a run's full model spec and dataset, a judgment's rubric,
    and ratings unique per study (0.1.0 let a second study overwrite the first's)."""
    _script(
        db,
        f"""
        alter table runs add column spec text;
        alter table runs add column dataset_sha256 text;
        update runs set dataset_sha256 = json_extract(config, '$.dataset_sha256'),
            spec = json_object('name', json_extract(config, '$.model_name'),
                               'backend', json_extract(config, '$.backend'),
                               'model', json_extract(config, '$.model_id'),
                               'base_url', json_extract(config, '$.base_url'),
                               'provenance', json_extract(config, '$.provenance'));
        alter table judgments add column rubric_version text;
        update judgments set rubric_version = case prompt_version
            when '{JUDGE_PROMPT_0_1_0}' then '{RUBRIC_0_1_0}' else 'unknown' end;
        create index judgments_config on judgments(judge_model, mode, prompt_version,
                                                   rubric_version);
        create table ratings_v2 (
            id text primary key, study_id integer, item_id text, response_key text,
            username text, dimension text, score integer, comment text,
            time_spent_s real, rubric_version text, created text, updated text,
            unique(study_id, response_key, username, dimension));
        insert into ratings_v2 select id, study_id, item_id, response_key, username, dimension,
            score, comment, time_spent_s, rubric_version, created, updated from ratings;
        drop table ratings;
        alter table ratings_v2 rename to ratings;
        create index ratings_study on ratings(study_id, username);
        create index ratings_response on ratings(response_key, dimension);
        """,
    )


@migration
def m003_access(db: sqlite_utils.Database) -> None:
    """Studies can be closed (their results are published then), paid model calls are
    counted per account, and server URLs stored by 0.1.0 lose their credentials."""
    from koed_core.text.redact import redact_url

    _script(
        db,
        """
        alter table studies add column closed text;
        create table model_calls (account text, model text, at real);
        create index model_calls_account on model_calls(account, at)
        """,
    )
    for row in list(db.query("select id, config, spec from runs")):
        config = json.loads(row["config"])
        if config.get("base_url") and redact_url(config["base_url"]) != config["base_url"]:
            config["base_url"] = redact_url(config["base_url"])
            spec = json.loads(row["spec"]) if row["spec"] else None
            if spec is not None:
                spec["base_url"] = redact_url(spec.get("base_url"))
            db.execute(
                "update runs set config = ?, spec = ? where id = ?",
                [json.dumps(config, sort_keys=True), json.dumps(spec) if spec else None, row["id"]],
            )


@migration
def m004_paper_protocol(db: sqlite_utils.Database) -> None:
    """The paper's two calls keep the emotion answer beside the reply; a response that
    named no label is told apart from one that named a wrong label; judgments record
    which attempt they were (unscored verdicts are asked again)."""
    _script(
        db,
        """
        alter table responses add column emotion_raw text;
        alter table emotion_scores add column given integer;
        update emotion_scores set given = coalesce((select json_array_length(s.predicted) > 0
            from responses s where s.id = emotion_scores.response_id), 1);
        alter table judgments add column attempt integer default 0;
        update judgments set attempt = 0
        """,
    )


@migration
def m005_jobs(db: sqlite_utils.Database) -> None:
    """Long work that outlives a page: jobs a worker process executes, the workers'
    heartbeats, and the provider batches a job sent (so a resumed job polls the batch it
    already paid for instead of sending it again)."""
    _script(
        db,
        """
        create table jobs (
            id integer primary key autoincrement, kind text not null, label text not null,
            params text not null, state text not null default 'queued', created_by text,
            created text, started text, ended text, done integer default 0,
            total integer default 0, failed integer default 0, errors text, rate real,
            message text, reason text, result text, cancel_requested integer default 0,
            worker text, heartbeat real);
        create index jobs_state on jobs(state);
        create table job_workers (
            id text primary key, pid integer, host text, started real, heartbeat real);
        create table provider_batches (
            id text primary key, server text not null, model text not null,
            input_file_id text, custom_ids text not null, status text, created real,
            output_file_id text, error_file_id text, consumed integer default 0, owner text);
        create index provider_batches_open on provider_batches(server, model, consumed)
        """,
    )


@migration
def m006_crowd(db: sqlite_utils.Database) -> None:
    """Crowd studies: signed invite links with an expiry and a cap on places, and the
    workers who came through them (platform ids for paying them, consent version,
    screening answers, stop reason, the admin's decision). One worker per platform id
    and study: a returning worker resumes."""
    _script(
        db,
        """
        create table invites (
            id text primary key, study_id integer not null, platform text not null,
            expires real not null, cap integer not null, batch_size integer not null,
            batches integer not null default 1, completion_code text not null,
            redirect_url text, consent_ko text not null, consent_en text not null,
            reward real, currency text, revoked integer default 0, created_by text,
            created text);
        create table crowd_workers (
            username text primary key, invite_id text not null, study_id integer not null,
            platform text not null, worker_id text not null, study_ref text, session_ref text,
            status text not null, stop_reason text, consent_version text, consented_at text,
            screening text, languages text, completed_at text, decision text, decided_by text,
            decided_at text, created text, unique(study_id, platform, worker_id))
        """,
    )


STAMPED = (
    "runs",
    "responses",
    "emotion_scores",
    "judgments",
    "raters",
    "studies",
    "study_items",
    "ratings",
    "crowd_workers",
)
"""The tables every shown number is computed from (not jobs, batches or assignments,
which change every second while work is under way and move no number)."""


@migration
def m007_change_stamp(db: sqlite_utils.Database) -> None:
    """A counter that every change to a table in STAMPED moves, whichever process makes
    it (the app, the worker, the command line): pages keep computed numbers until it
    moves, instead of recomputing the gap or agreement tables on every click."""
    db.execute("create table _koed_changes (id integer primary key check (id = 1), n integer)")
    db.execute("insert into _koed_changes (id, n) values (1, 0)")
    for table in STAMPED:
        for event in ("insert", "update", "delete"):
            db.execute(
                f"create trigger [_koed_{table}_{event}] after {event} on [{table}] "
                "begin update _koed_changes set n = n + 1 where id = 1; end"
            )


@migration
def m008_crowd_outcomes(db: sqlite_utils.Database) -> None:
    """Crowd links as platforms run them: the Prolific study id a link belongs to, a code
    per outcome (screened out, failed checks) beside the completion code, a limit on
    calibration attempts; per worker, which code they were shown, their calibration
    attempts and where MTurk wants the HIT submitted. Links made before keep working: a
    missing code is derived from the link's id when asked."""
    for column, kind in (
        ("prolific_study_id", "text"),
        ("screenout_code", "text"),
        ("failed_code", "text"),
        ("calibration_attempts", "integer default 1"),
    ):
        db.execute(f"alter table invites add column {column} {kind}")
    for column, kind in (
        ("code_given", "text"),
        ("code_kind", "text"),
        ("calibration_tries", "integer default 0"),
        ("calibration_gaps", "text"),
        ("submit_to", "text"),
        ("decision_reason", "text"),
    ):
        db.execute(f"alter table crowd_workers add column {column} {kind}")
    # An attention check shown with what to choose ("choose 2 on every dimension"): only
    # a check the rater was told about can count against them. Older ones have none.
    db.execute("alter table study_items add column instruction text")


@migration
def m009_judge_steps(db: sqlite_utils.Database) -> None:
    """Which judge template worded the prompt and which parser read the verdict: two
    judgments differing in either are two sources. Earlier ones were the ``fenced``
    template, read leniently in paper mode and as JSON in strict mode."""
    db.execute("alter table judgments add column template text not null default 'fenced'")
    db.execute("alter table judgments add column parse text not null default 'lenient'")
    db.execute("update judgments set parse = 'json' where mode = 'strict'")


@migration
def m010_episodes(db: sqlite_utils.Database) -> None:
    """Multi-turn episodes: a Listener turn is a response with its place in the episode
    (``turn``, None for a single reply), and the simulated Speaker's turns are kept turn
    by turn, every attempt (a turn that broke character is flagged, never dropped)."""
    _script(
        db,
        """
        alter table responses add column turn integer;
        create table episode_turns (
            id text primary key, run_id text not null references runs(id),
            conv_id text not null, lang text not null, turn integer not null,
            attempt integer not null, raw text, text text, breaks text not null default '[]',
            kept integer not null default 0, ends integer not null default 0, error text,
            error_kind text, prompt text, latency_s real, created text,
            unique(run_id, conv_id, lang, turn, attempt));
        create index episode_turns_run on episode_turns(run_id, conv_id, lang)
        """,
    )
    for event in ("insert", "update", "delete"):
        db.execute(
            f"create trigger [_koed_episode_turns_{event}] after {event} on [episode_turns] "
            "begin update _koed_changes set n = n + 1 where id = 1; end"
        )


@migration
def m011_annotations(db: sqlite_utils.Database) -> None:
    """Linguists' annotation of the adaptation: projects (which dialogues, how many
    annotators each, which taxonomy), one annotation per annotator and dialogue (its
    category, note and status; the reviewer's final answer is one more, ``kind``
    'adjudicated'), and its cultural-signal spans in code points. Each taxonomy is kept
    whole under its version, so an annotation names exactly the types it was made with."""
    _script(
        db,
        """
        create table annotation_taxonomies (
            version text primary key, name text not null, types text not null,
            created text);
        create table annotation_projects (
            id integer primary key autoincrement, name text not null,
            dataset_sha256 text not null, conv_ids text not null,
            per_item integer not null default 2, annotators text not null default '[]',
            taxonomy_version text not null references annotation_taxonomies(version),
            created text, closed text);
        create table annotations (
            id text primary key, project_id integer not null references annotation_projects(id),
            conv_id text not null, annotator text not null, kind text not null,
            category text, note text not null default '', status text not null,
            taxonomy_version text not null, created text, updated text,
            unique(project_id, conv_id, annotator, kind));
        create index annotations_project on annotations(project_id, conv_id);
        create table annotation_spans (
            id text primary key, annotation_id text not null references annotations(id),
            position integer not null, start integer not null, [end] integer not null,
            text text not null, type text not null, en_position integer, en_start integer,
            en_end integer, en_text text, no_counterpart integer not null default 0,
            origin text not null default 'person', created text);
        create index annotation_spans_annotation on annotation_spans(annotation_id)
        """,
    )
    for table in ("annotation_projects", "annotations", "annotation_spans"):
        for event in ("insert", "update", "delete"):
            db.execute(
                f"create trigger [_koed_{table}_{event}] after {event} on [{table}] "
                "begin update _koed_changes set n = n + 1 where id = 1; end"
            )


@migration
def m012_crowd_middle(db: sqlite_utils.Database) -> None:
    """A crowd study in the middle: each worker's last activity (a place comes back after
    the study's timeout of inactivity at any step, as Prolific times out a submission),
    the calibration item whose feedback they have not yet moved past (a reload shows it
    again), and per attention check the score its instruction asks for (checks now ask
    for different scores, so answering the same everywhere fails them; older checks all
    asked for 2)."""
    db.execute("alter table crowd_workers add column last_seen text")
    db.execute("update crowd_workers set last_seen = coalesce(completed_at, consented_at, created)")
    db.execute("alter table crowd_workers add column calibration_shown text")
    db.execute("alter table study_items add column instructed_score integer")
    db.execute(
        "update study_items set instructed_score = 2 "
        "where kind = 'attention' and instruction is not null"
    )


@migration
def m013_reply_cap(db: sqlite_utils.Database) -> None:
    """Answers are kept up to a stated size: a response cut there records the cap and
    the length it had (both null for every answer stored before, which came whole)."""
    db.execute("alter table responses add column cut_at integer")
    db.execute("alter table responses add column full_chars integer")


@migration
def m014_judge_replicate(db: sqlite_utils.Database) -> None:
    """A judging pass asked again with nothing else changed (the noise floor of a
    sensitivity table) is a source of its own: ``replicate`` 0 is every earlier pass."""
    db.execute("alter table judgments add column replicate integer not null default 0")


@migration
def m015_response_claims(db: sqlite_utils.Database) -> None:
    """An item of a run is claimed by one process before it is asked, so two processes
    running the same run (a double press, two ``koed run`` at once) never ask the model
    for the same item; the claim goes when its answer is stored."""
    _script(
        db,
        """create table response_claims (
             response_id text primary key,
             run_id text not null,
             owner text not null,
             claimed real not null
           );
           create index response_claims_run on response_claims (run_id)""",
    )


@migration
def m016_lang_position(db: sqlite_utils.Database) -> None:
    """Each rating says whether the rater met its dialogue first in this language (1) or
    had already rated the dialogue's other language version in the study (2): a study
    that counterbalances the order records it; earlier ratings stay unknown (null)."""
    db.execute("alter table ratings add column lang_position integer")


@migration
def m017_prolific(db: sqlite_utils.Database) -> None:
    """Prolific through its API: every call the app made on the researcher's account
    (what, when, how it ended; never the token), the submissions a sync read with the
    reason one was flagged, the review actions applied, and each bonus with its state
    ("paying" is stored before the pay call, so a crash or a retry never pays twice)."""
    _script(
        db,
        """create table prolific_calls (
             id integer primary key, at text not null, invite_id text, what text not null,
             method text not null, path text not null, status integer, outcome text not null,
             tries integer not null default 1);
           create index prolific_calls_invite on prolific_calls (invite_id, at);
           create table prolific_submissions (
             id text primary key, invite_id text not null, participant_id text not null,
             status text not null, started_at text, completed_at text, study_code text,
             flag text, seen_at text not null);
           create index prolific_submissions_invite on prolific_submissions (invite_id);
           create table prolific_actions (
             submission_id text not null, action text not null, at text not null,
             outcome text not null, primary key (submission_id, action));
           create table prolific_bonuses (
             invite_id text not null, participant_id text not null, round text not null,
             amount text not null, state text not null, bulk_id text, updated text not null,
             primary key (invite_id, participant_id, round))""",
    )


@migration
def m018_span_comment(db: sqlite_utils.Database) -> None:
    """A comment per span, as INCEpTION keeps one: what the annotator wants to say about
    this signal (a doubt, a reading); the spans stored before it have none ('')."""
    db.execute("alter table annotation_spans add column comment text not null default ''")


@migration
def m019_bonus_evidence(db: sqlite_utils.Database) -> None:
    """Evidence of a bonus's payment: ``baseline``, ``sent_at`` and ``note`` (why it stands)."""
    db.execute("alter table prolific_bonuses add column baseline text")
    db.execute("alter table prolific_bonuses add column note text not null default ''")
    db.execute("alter table prolific_bonuses add column sent_at text")


@migration
def m020_arrivals_and_address(db: sqlite_utils.Database) -> None:
    """Per link, a Prolific arrival's grace and the most places a sync may ask (null: the
    defaults); the public address ``koed serve --domain`` records (``site_settings``)."""
    db.execute("alter table invites add column arrival_grace_minutes integer")
    db.execute("alter table invites add column max_places integer")
    db.execute("create table site_settings (name text primary key, value text, updated text)")


@migration
def m022_invite_contact(db: sqlite_utils.Database) -> None:
    """Whom a link's workers write to, named in its consent (links made before: null)."""
    db.execute("alter table invites add column contact text")


@migration
def m023_variants(db: sqlite_utils.Database) -> None:
    """Translated variants, versioned, and people's checks of their turns (db/variants.py)."""
    _script(
        db,
        """create table variant_versions (id text primary key, variant text not null, version
        integer not null, made_by text not null, model text, translator text, prompt_version text,
        prompt text, source_sha256 text not null, created text, note text not null default '',
        unique(variant, version)); create table variant_dialogues (version_id text not null,
        conv_id text not null, source_hash text not null, situation text not null, turns text not
        null, primary key (version_id, conv_id)); create table variant_checks (version_id text not
        null, conv_id text not null, turn integer not null, checker text not null, verdict text not
        null, text text not null, created text, primary key(version_id, conv_id, turn, checker))""",
    )


def pending(db: sqlite_utils.Database) -> list[tuple[str, Migration]]:
    """Migrations not applied yet, in order."""
    done = set(applied(db))
    return [(name, fn) for name, fn in MIGRATIONS if name not in done]


def unknown(db: sqlite_utils.Database) -> list[str]:
    """Applied migrations this code does not know: a newer KoED Studio made the file."""
    known = {name for name, _ in MIGRATIONS}
    return [name for name in applied(db) if name not in known]


for _topic in ("prolific", "settings", "words", "active", "computes", "cells"):  # m024-m034
    importlib.import_module(f"koed_core.db.migrations_{_topic}")  # each registers its own
