"""A cache file in SQLite for one writing process and its threads: WAL (a reader may look while it writes;
several processes may share it, one writing at a time), NORMAL sync (a crash loses no committed row), and a
`meta` table whose schema version must be the one this klue reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from klue.errors import DataError
from klue.io.output import OutputError


def open_store(path: Path, schema_version: str, table: str, what: str) -> sqlite3.Connection:
    """The connection to `path` (created with its directory when missing), with `table` (a CREATE TABLE body)
    created; DataError naming `what` ("request cache") when the file is not one, OutputError when it cannot
    be written. The connection is shareable across threads: the caller serialises them."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (schema_version,))
        (version,) = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if version != schema_version:
            raise sqlite3.DatabaseError(f"{what} schema {version}, this klue reads {schema_version}")
        db.execute(f"CREATE TABLE IF NOT EXISTS {table}")
        return db
    except sqlite3.DatabaseError as error:
        raise DataError(f"{path}: not a usable {what} ({error}); move it away to start afresh", path) from None
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
