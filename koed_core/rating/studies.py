"""Human rating: studies, blind assignment with overlap, and ratings on the five dimensions.

A study snapshots the responses to rate (context and text, never the model name) plus
attention checks. Assignment hands each rater the least-rated item they have not seen,
in their languages, in an order shuffled per rater by a seed (reproducible), until every
item has ``overlap`` raters; work left open longer than the timeout goes back to the pool.
Every write is one BEGIN IMMEDIATE transaction, so many raters can save at once. A rating
belongs to its study: rating the same response in another study never touches it.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from koed_core.db import (
    RaterProfile,
    RatingItem,
    Ratings,
    Runs,
    Store,
    StudyConfig,
    now,
    short_hash,
    utcnow,
)
from koed_core.db.types import CandidateItem
from koed_core.dialogues.dataset import Dataset
from koed_core.dialogues.variants import cells_in
from koed_core.i18n import _
from koed_core.judge.rubric import SCALE, codes, rubric_version
from koed_core.models.protocol import build_task
from koed_core.paths import DATA_DIR
from koed_core.rating import bilingual
from koed_core.rating.attention_rules import (  # the rule's home; imported from here too
    ATTENTION_FILE,
    attention_limits,
    check_verdicts,
    instructed_score,
)
from koed_core.rating.errors import RatingError
from koed_core.rating.item_content import ItemContent
from koed_core.rating.sampling import sampled

__all__ = [
    "RaterProfile",
    "RatingError",
    "RatingItem",
    "StudyRules",
    "StudyConfig",
    "attention_limits",
    "check_verdicts",
    "instructed_score",
]

CALIBRATION_FILE = DATA_DIR / "calibration.json"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _order_key(seed: int, username: str, item_id: str) -> str:
    """Per-rater shuffle that is the same every time for the same seed."""
    return hashlib.sha256(f"{seed}:{username}:{item_id}".encode()).hexdigest()


def _open_to(candidate: CandidateItem, overlap: int) -> bool:
    """Attention checks are for everyone; other items stop at ``overlap`` raters."""
    return candidate.kind == "attention" or candidate.taken < overlap


class StudyRules:
    """Studies, assignments and ratings: the rules (who rates what, how often, in which
    order, and when a study may close); the queries are ``Ratings`` in ``koed_core.db``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.q = Ratings(store)

    # Raters -----------------------------------------------------------------------------

    def save_profile(self, profile: RaterProfile) -> None:
        """Store or update onboarding answers."""
        if not profile.languages or set(profile.languages) - {"ko", "en"}:
            raise RatingError(_("choose the languages you rate in: ko, en or both"))
        self.q.save_profile(profile, now())

    def profile(self, username: str) -> RaterProfile | None:
        """The rater's onboarding answers, or None before onboarding."""
        return self.q.profile(username)

    def mark_calibrated(self, username: str) -> None:
        """Record that the rater finished calibration."""
        self.q.mark_calibrated(username, now())

    def calibrated(self, username: str) -> bool:
        """Whether the rater may rate live items."""
        return self.q.calibrated(username)

    # Studies ----------------------------------------------------------------------------

    def create_study(self, config: StudyConfig, dataset: Dataset) -> int:
        """Snapshot the runs' successful responses (and attention checks) into a study.

        Raises:
            RatingError: no response of the chosen runs and languages to rate.
        """
        if config.overlap < 1:
            raise RatingError(_("overlap must be at least 1"))
        if config.whole_episodes:
            return self._create_episode_study(config, dataset)
        # the languages a rater reads: each brings the variant written in it (ko-from-en)
        rows = Runs(self.store).answered(config.run_ids, cells_in(config.langs))
        if not rows:
            raise RatingError(_("the chosen runs have no successful responses in these languages"))
        config, rows = sampled(config, rows, dataset)
        with self.store.write():
            study_id = self.q.insert_study(config.name, asdict(config), rubric_version(), now())
            for row in rows:
                self.add_response_item(study_id, row)
            self._add_attention(study_id, config, dataset)
        return study_id

    def add_response_item(self, study_id: int, row: dict[str, Any]) -> None:
        """One stored response as an item of the study (inside the caller's transaction)."""
        context = json.loads(row["context"] or "[]")
        content = ItemContent("response", row["conv_id"], row["lang"], context, row["text"])
        self._add_item(study_id, row["id"], content)

    def _create_episode_study(self, config: StudyConfig, dataset: Dataset) -> int:
        """A study of whole episodes: one item per episode, the whole conversation as
        the item, hung on its last Listener turn; attention checks as in any study."""
        from koed_core.rating.episode_items import episode_items

        found = episode_items(self.store, config)
        with self.store.write():
            study_id = self.q.insert_study(config.name, asdict(config), rubric_version(), now())
            for episode in found:
                context = [list(line) for line in episode.lines]
                content = ItemContent("episode", episode.conv_id, episode.lang, context, "")
                self._add_item(study_id, episode.key, content)
            self._add_attention(study_id, config, dataset)
        return study_id

    def _add_attention(self, study_id: int, config: StudyConfig, dataset: Dataset) -> None:
        for n, (kind, conv_id, lang, context, text) in enumerate(_attention_items(config, dataset)):
            score = check_score(config.seed, n)
            instruction = attention_instruction(score)
            content = ItemContent(kind, conv_id, lang, context, text, instruction, score)
            self._add_item(study_id, None, content)

    def _add_item(
        self, study_id: int, response_id: str | None, content: ItemContent, copy: int = 0
    ) -> None:
        kind, conv_id, lang, text = content.kind, content.conv_id, content.lang, content.text
        instruction, score = content.instruction, content.score
        key = response_id or (
            (kind, conv_id, lang, text, copy) if copy else (kind, conv_id, lang, text)
        )
        self.q.add_item(
            {
                "id": short_hash(study_id, key),
                "study_id": study_id,
                "response_id": response_id,
                "kind": kind,
                "conv_id": conv_id,
                "lang": lang,
                "context": json.dumps([list(t) for t in content.context], ensure_ascii=False),
                "response": text,
                "created": now(),
                "instruction": instruction,
                "instructed_score": score if instruction else None,
            }
        )

    def studies(self) -> list[dict[str, Any]]:
        """Every study with its configuration."""
        return [
            {
                "id": s["id"],
                "name": s["name"],
                **s["config"],
                "created": s["created"],
                "closed": s["closed"],
            }
            for s in self.q.studies()
        ]

    def config(self, study_id: int) -> StudyConfig:
        """One study's configuration.

        Raises:
            RatingError: no such study.
        """
        row = self.q.study(study_id)
        if row is None:
            raise RatingError(_("no study {id}", id=study_id))
        return StudyConfig.from_json(row["config"])

    def close(self, study_id: int) -> None:
        """Close a study: nobody gets new items, and its results may be published."""
        self.config(study_id)
        self.q.close_study(study_id, now())

    def closed(self, study_id: int) -> bool:
        """Whether an admin closed the study."""
        row = self.q.study(study_id)
        return bool(row and row["closed"])

    # Assignment -------------------------------------------------------------------------

    def next_item(
        self,
        study_id: int,
        username: str,
        at: datetime | None = None,
        want: str | None = None,
        require: str | None = None,
    ) -> RatingItem | None:
        """The rater's open item, else a new one: least-rated first, per-rater shuffle.
        ``want="attention"`` takes an attention check if one is left (a crowd batch that
        must hold its share of them); ``require="response"`` gives nothing new unless a
        response is still open to this rater (a crowd worker's visit ends there, never on
        checks alone).

        None when the quota is reached or nothing is left for this rater.
        """
        config = self.config(study_id)
        profile = self.profile(username)
        if profile is None:
            raise RatingError(_("finish onboarding before rating"))
        if self.closed(study_id):
            return None
        moment = at or utcnow()
        cutoff = _iso(moment - timedelta(minutes=config.timeout_minutes))
        with self.store.write():
            self.q.release_abandoned(study_id, cutoff)
            open_id = self.q.open_assignment(study_id, username)
            if open_id is not None:
                return self._item(open_id)
            if config.quota is not None and self.done(study_id, username) >= config.quota:
                return None
            chosen = self._choose(config, study_id, username, profile.languages, want, require)
            if chosen is None:
                return None
            assignment_id = self.q.assign(study_id, chosen, username, _iso(moment))
        return self._item(assignment_id)

    def _choose(
        self,
        config: StudyConfig,
        study_id: int,
        username: str,
        languages: tuple[str, ...],
        want: str | None = None,
        require: str | None = None,
    ) -> str | None:
        seen = self.q.seen(study_id, username)
        open_items = [
            c
            for c in self._allowed(config, study_id, username, languages)
            if _open_to(c, config.overlap)
        ]
        if require and not any(c.kind == require for c in open_items):
            return None
        if want and any(c.kind == want for c in open_items):
            open_items = [c for c in open_items if c.kind == want]
        if not open_items:
            return None

        def rank(c: CandidateItem) -> tuple[int, int, str]:
            taken = 0 if c.kind == "attention" else c.taken
            later = bilingual.order_rank(config, username, c, seen)
            return taken, later, _order_key(config.seed, username, c.item_id)

        return min(open_items, key=rank).item_id

    def _item(self, assignment_id: str) -> RatingItem:
        item = self.q.item(assignment_id)
        if item is None:
            raise RatingError(
                _("this item is no longer assigned to you (it timed out); take the next")
            )
        return item

    def ensure_attention(self, study_id: int, per_lang: int) -> None:
        """At least ``per_lang`` attention checks per language (copies of the study's own,
        each a new item): a worker doing several batches meets new ones in each."""
        rows = self.q.items_of_kind(study_id, "attention")
        seed = self.config(study_id).seed
        by_lang: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_lang.setdefault(row["lang"], []).append(row)
        with self.store.write():
            for lang, items in by_lang.items():
                for n in range(len(items), per_lang):
                    src = items[n % len(items)]
                    told = src["instruction"] is not None  # a study from before stays untold
                    score = check_score(seed, n) if told else None
                    content = ItemContent(
                        "attention", src["conv_id"], lang, json.loads(src["context"]),
                        src["response"], attention_instruction(score) if score else None, score,
                    )  # fmt: skip
                    self._add_item(study_id, None, content, copy=n)

    def room_for_newcomer(self, study_id: int, langs: tuple[str, ...] | None = None) -> bool:
        """Whether someone new could be given a response in ``langs`` (default: any of the
        study's languages). Attention checks aside: they are nobody's work."""
        config = self.config(study_id)
        if self.closed(study_id):
            return False
        return any(
            c.kind != "attention" and _open_to(c, config.overlap)
            for c in self.q.candidates(study_id, "", langs or config.langs)
        )

    def has_work(self, study_id: int, username: str, kind: str = "response") -> bool:
        """Whether the rater holds an item of this kind or could be given one now."""
        profile = self.profile(username)
        if profile is None or self.closed(study_id):
            return False
        if self.q.open_kind(study_id, username) == kind:
            return True
        config = self.config(study_id)
        return any(
            c.kind == kind and _open_to(c, config.overlap)
            for c in self._allowed(config, study_id, username, profile.languages)
        )

    def _allowed(
        self, config: StudyConfig, study_id: int, username: str, languages: tuple[str, ...]
    ) -> list[CandidateItem]:
        """Candidates the study's bilingual design lets this rater have."""
        seen = self.q.seen(study_id, username)
        return bilingual.allowed(config, self.q.candidates(study_id, username, languages), seen)

    def done(self, study_id: int, username: str) -> int:
        """Items the rater finished (rated; skipped and flagged items do not count)."""
        return self.q.status_count(study_id, username, "done")

    def workload(self, study_id: int, username: str, kind: str | None = None) -> int:
        """The m of "n of m": what this rater has done, holds, or can still be given
        (``kind``: of that kind only; a crowd worker's work is responses alone).

        Items other raters already filled up to the overlap are not counted: the rater
        could never get them.
        """
        config = self.config(study_id)
        profile = self.profile(username)
        if profile is None:
            return 0
        if kind is None:
            done = self.done(study_id, username)
            holding = 1 if self.q.open_assignment(study_id, username) else 0
        else:
            done = self.q.kind_done(study_id, username, kind)
            holding = 1 if self.q.open_kind(study_id, username) == kind else 0
        still_open = sum(
            _open_to(c, config.overlap)
            for c in self._allowed(config, study_id, username, profile.languages)
            if kind is None or c.kind == kind
        )
        total = done + holding + still_open
        return min(total, config.quota) if config.quota is not None else total

    # Ratings ----------------------------------------------------------------------------

    def save_rating(
        self,
        assignment_id: str,
        username: str,
        scores: dict[str, int],
        comment: str = "",
        time_spent_s: float | None = None,
    ) -> None:
        """Store all five scores of one item; saving again updates them.

        Raises:
            RatingError: a dimension missing or a score outside 1-5, or not the rater's item.
        """
        missing = [code for code in codes() if code not in scores]
        if missing:
            raise RatingError(
                _("score every dimension; missing: {codes}", codes=", ".join(missing))
            )
        bad = {k: v for k, v in scores.items() if v not in SCALE or k not in codes()}
        if bad:
            raise RatingError(
                _("scores must be 1-5 on {codes}; got {bad}", codes=", ".join(codes()), bad=bad)
            )
        with self.store.write():
            target = self.q.assignment_target(assignment_id, username)
            if target is None:
                raise RatingError(_("this item is not assigned to you (it may have timed out)"))
            if self.closed(int(target["study_id"])):
                raise RatingError(_("this study is closed; its ratings can no longer change"))
            stamp = now()
            done = self.q.seen(int(target["study_id"]), username, "done")
            place = bilingual.position(done, str(target["conv_id"]), str(target["lang"]))
            for code in codes():
                self.q.upsert_rating(
                    {
                        **target,
                        "lang_position": place,
                        "username": username,
                        "dimension": code,
                        "score": scores[code],
                        "comment": comment.strip(),
                        "time_spent_s": time_spent_s,
                        "rubric_version": rubric_version(),
                        "created": stamp,
                        "updated": stamp,
                    }
                )
            self.q.finish(assignment_id, "done", stamp)

    def set_aside(self, assignment_id: str, username: str, status: str, note: str = "") -> None:
        """Skip an item, or flag it as broken or offensive; the rater is not offered it again."""
        if status not in ("skipped", "flagged"):
            raise RatingError(_("status must be skipped or flagged"))
        with self.store.write():
            if self.q.assignment_target(assignment_id, username) is None:
                raise RatingError(_("this item is not assigned to you (it may have timed out)"))
            self.q.finish(assignment_id, status, now(), note)

    def last_rated(
        self, study_id: int, username: str
    ) -> tuple[RatingItem, dict[str, int], str] | None:
        """The rater's most recent rating, to correct it."""
        assignment_id = self.q.last_done(study_id, username)
        if assignment_id is None:
            return None
        item = self._item(assignment_id)
        rows = self.q.scores_of(assignment_id)
        scores = {r["dimension"]: int(r["score"]) for r in rows}
        return item, scores, rows[0]["comment"] if rows else ""


def _attention_items(
    config: StudyConfig, dataset: Dataset
) -> list[tuple[str, str, str, list[list[str]], str]]:
    """Deliberately unempathetic replies to real contexts, chosen by the study's seed."""
    if config.attention_checks <= 0 or not dataset.dialogues:
        return []
    raw = json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))
    chooser = random.Random(config.seed)
    items = []
    for lang in config.langs:
        replies = raw["replies"][lang]
        for n in range(config.attention_checks):
            dialogue = chooser.choice(dataset.dialogues)
            task = build_task(dialogue, lang)  # type: ignore[arg-type]
            context = [[t.role, t.text] for t in task.turns]
            items.append(("attention", dialogue.conv_id, lang, context, replies[n % len(replies)]))
    return items


def calibration_items(langs: tuple[str, ...]) -> list[dict[str, Any]]:
    """The shipped calibration items (with reference scores) in these languages."""
    items = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))["items"]
    return [item for item in items if item["lang"] in langs]


def attention_instruction(score: int) -> str:
    """What an attention check tells the rater to do, in Korean and English."""
    said = json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))["instruction_template"]
    return f"{said['ko'].format(score=score)} / {said['en'].format(score=score)}"


def check_score(seed: int, n: int) -> int:
    """The score the study's n-th attention check asks for: a fixed cycle started at the
    study's seed, so neighbouring checks never ask for the same score and a rater who
    answers the same everywhere fails most of them."""
    scores = json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))["check_scores"]
    return int(scores[(seed + n) % len(scores)])
