"""The embedding cache: every vector a model gave, in one SQLite file, so a rerun, a second task or another
seed asks the model only for texts it has not embedded yet, and an interrupted run resumes.

A key is the SHA-256 of the model's fingerprint (the weights' hash with the pooling for a local model, the
server's model id and URL for a server), the prompt and the text. The value is the vector exactly as the
backend returned it (float32, before any normalisation). Vectors are stored chunk by chunk as they come, each
chunk its own transaction. WAL lets several cells of one benchmark (worker processes) share the file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from klue.io.output import OutputError
from klue.io.store import open_store

SCHEMA_VERSION = "1"
KEY_VERSION = "1"  # bump when what a key covers changes, so old vectors stop matching rather than mislead
CACHE_FILE = "embedding_cache.sqlite"


def embedding_key(fingerprint: str, prompt: str, text: str) -> str:
    payload = json.dumps([KEY_VERSION, fingerprint, prompt, text], ensure_ascii=False)  # one spelling per tuple
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by key in SQLite (`path` is created with its directory when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_store(self.path, SCHEMA_VERSION, "vectors (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, "
                              "vector BLOB NOT NULL)", "embedding cache")

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those keys that have one."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps the number of parameters per statement
            part = wanted[start:start + 500]
            rows = self._db.execute(f"SELECT key, dim, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})",
                                    part).fetchall()
            for key, dim, blob in rows:
                vector = np.frombuffer(blob, dtype="<f4")
                if len(vector) == dim:  # a row that does not decode is asked again
                    found[key] = vector
        return found

    def put_many(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store rows of `vectors` under `keys`, in one transaction."""
        rows = [(key, int(v.shape[0]), np.ascontiguousarray(v, dtype="<f4").tobytes()) for key, v in zip(keys, vectors)]
        try:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as error:  # "database or disk is full", a read-only file
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise OutputError(f"cannot write {self.path}: {error}") from None

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()
