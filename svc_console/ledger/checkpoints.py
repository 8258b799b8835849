"""The SQLite ledger's checkpoints, made off the broker's event loop.

In WAL mode SQLite copies the log back into the database file (a checkpoint) once the log passes
a thousand pages, and it does so inside the commit that crossed the mark, on the connection that
committed: the broker's, on its event loop. A request writes some twenty-five pages, so one
request in forty waited 15 to 20 ms for a checkpoint, and every other request on the loop waited
with it. A thread of its own checkpoints on a connection of its own after commits (PASSIVE: it
neither waits for nor blocks the writer or the readers, and SQLite lets go of the GIL while it
copies pages and waits for the disk).

A PASSIVE checkpoint copies the frames that were in the log when it began, and the log starts
again from its beginning only when a write finds every frame copied: a broker that never stops
writing could keep that from happening. So the writer still checkpoints itself, as SQLite does,
past `MOST_FRAMES` (four times SQLite's mark): then only what the thread has not yet copied.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

PAUSE_S = 0.2  # between two checkpoints: at most five a second, however many commits
MOST_FRAMES = 4096  # 16 MiB of log in 4 KiB pages: past it, the writer checkpoints itself


class Checkpointer:
    """Checkpoints the ledger at `path` after commits (`committed`), on a thread of its own,
    until `close`; the writer connection `writer` checkpoints itself only past `MOST_FRAMES`."""

    def __init__(self, path: Path, writer: sqlite3.Connection):
        writer.execute(f"PRAGMA wal_autocheckpoint={MOST_FRAMES}")
        self._path = path
        self._due = threading.Event()  # a commit since the last checkpoint
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ledger-checkpoints", daemon=True)
        self._thread.start()

    def committed(self, _took: float = 0.0) -> None:
        """A commit listener (`Ledger.commit_listeners`): the log has grown."""
        self._due.set()

    def close(self) -> None:
        """Stop the thread; the writer's own close makes the last checkpoint."""
        self._stopping.set()
        self._due.set()
        self._thread.join()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None)
        try:
            while True:
                self._due.wait()
                if self._stopping.is_set():
                    return
                self._due.clear()
                self._checkpoint(conn)
                if self._stopping.wait(PAUSE_S):
                    return
        finally:
            conn.close()

    @staticmethod
    def _checkpoint(conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # tried again after the next commit
            log.warning("checkpointing the ledger failed: %s", exc)
