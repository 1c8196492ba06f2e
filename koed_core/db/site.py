"""Settings of the site itself that every process reads from the database: the public
address ``koed serve --domain`` records (migration m020). The database is the one place
the researcher's shell (``koed invite create``, ``koed prolific publish``) and the app's
processes all open, where an environment variable set by ``koed serve`` reaches only its
own children."""

from __future__ import annotations

from koed_core.db.store import Store
from koed_core.db.types import now

PUBLIC_URL = "public_url"


class SiteSettings:
    """The ``site_settings`` table: one value per name."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, name: str) -> str | None:
        """The value stored under ``name``, or None."""
        rows = self.store.rows("select value from site_settings where name = ?", [name])
        return str(rows[0]["value"]) if rows else None

    def put(self, name: str, value: str) -> None:
        """Store ``value`` under ``name`` (replacing the one before)."""
        with self.store.write():
            self.store.db.execute(
                "insert into site_settings (name, value, updated) values (?, ?, ?) "
                "on conflict(name) do update set value = excluded.value, "
                "updated = excluded.updated",
                [name, value, now()],
            )
