"""The SQLite ledger's checkpoints (ledger/checkpoints.py): the writer's commits never copy the
log back into the database file (on the broker's event loop that was a 15 to 20 ms stall every
forty requests); the checkpointer's thread does, after commits. A real SQLite file in WAL mode;
what was copied back is read from the file's size, which only a checkpoint grows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from helpers import eventually, plain_request

from svc_console.ledger import Ledger, audit, checkpoints

PAGE = 4096
# Three times SQLite's own mark for a checkpoint (1,000 pages), below the writer's.
PAST_SQLITES_MARK = 3 * 1000 * PAGE


def _write_until(ledger: Ledger, path: Path, done: Callable[[int], bool]) -> int:
    """Requests written one transaction each until `done(the log's size in bytes)`."""
    wal = Path(f"{path}-wal")
    written = 0
    while not wal.exists() or not done(wal.stat().st_size):
        ledger.insert_request(plain_request(f"req_{written:05d}"))
        written += 1
    return written


def _without_its_thread(path: Path) -> Ledger:
    """A ledger whose checkpointer's thread is stopped: only the writer can copy the log."""
    ledger = Ledger(path)
    ledger._checkpoints.close()
    ledger._checkpoints = None
    return ledger


def test_below_its_mark_the_writers_commits_leave_the_log_to_the_checkpointer(tmp_path):
    path = tmp_path / "ledger.db"
    ledger = _without_its_thread(path)
    try:
        before = path.stat().st_size
        written = _write_until(ledger, path, lambda size: size > PAST_SQLITES_MARK)
        # SQLite's writer would have copied the log back at 1,000 pages: the file is as it was.
        assert path.stat().st_size == before
        mark = ledger.db.execute("PRAGMA wal_autocheckpoint").fetchone()
        assert mark == (checkpoints.MOST_FRAMES,)
        assert ledger.db.execute("SELECT count(*) FROM requests").fetchone() == (written,)
    finally:
        ledger.close()


def test_past_its_mark_the_writer_checkpoints_itself(tmp_path):
    """A broker that never stops writing keeps a PASSIVE checkpoint from ever ending the log:
    its length is bounded by the writer's own checkpoint."""
    path = tmp_path / "ledger.db"
    ledger = _without_its_thread(path)
    try:
        before = path.stat().st_size
        mark_bytes = checkpoints.MOST_FRAMES * (PAGE + 24)  # a frame: a page and its header

        def grown() -> bool:
            return path.stat().st_size > before

        _write_until(ledger, path, lambda size: size > 2 * mark_bytes or grown())
        assert grown()
        assert Path(f"{path}-wal").stat().st_size < 2 * mark_bytes
    finally:
        ledger.close()


async def test_the_checkpointer_copies_the_log_back_after_commits(tmp_path):
    path = tmp_path / "ledger.db"
    ledger = Ledger(path)
    try:
        before = path.stat().st_size
        written = _write_until(ledger, path, lambda size: size > PAST_SQLITES_MARK)
        await eventually(lambda: path.stat().st_size > before)
    finally:
        ledger.close()
    # Closed, the ledger holds every request, and the chain over them is whole.
    reopened = Ledger(path)
    try:
        assert reopened.db.execute("SELECT count(*) FROM requests").fetchone() == (written,)
    finally:
        reopened.close()
    assert audit.verify(path).intact


def test_a_reader_starts_no_checkpointer(tmp_path):
    path = tmp_path / "ledger.db"
    Ledger(path).close()
    reader = Ledger(path, exclusive=False)
    try:
        assert reader._checkpoints is None
    finally:
        reader.close()
