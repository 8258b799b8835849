"""The approvals screen's first frame, drawn from the ledger while the runtime starts: the banner,
the header and the first page of the pending requests, read through a read-only connection of its
own. The full screen takes its place once the broker runs; until then nothing can be decided, and
the line under the header says so.

Nothing here imports the broker, the market clients or the policy engine: importing them is most
of the console's start-up, and it happens after this frame is on the terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from svc_console.core.models import SpendRequest
from svc_console.ledger.readers import ReadError, open_reader
from svc_console.ledger.request_reads import RequestView
from svc_console.tui.colors import palette
from svc_console.tui.request_lists import PAGE_SIZE, PENDING, Filter, ListState
from svc_console.tui.widgets.banner import SandboxBanner
from svc_console.tui.widgets.chrome import heading
from svc_console.tui.widgets.queue import RequestQueue

if TYPE_CHECKING:
    from svc_console.runtime import Runtime

STARTING = "Starting: the requests below can be decided in a moment…"


def first_page(ledger: Path, url: str | None = None) -> list[SpendRequest]:
    """The pending list's first page as the full screen first sorts it, from the ledger file or,
    with `url`, its PostgreSQL database; none from a ledger that does not exist yet or cannot be
    read now (the full screen, a moment later, says why)."""
    if url is None and not ledger.exists():
        return []
    try:
        conn = open_reader(ledger, url)
    except ReadError:
        return []
    try:
        return RequestView(conn).window(ListState(PENDING).query(Filter()), limit=PAGE_SIZE)
    except ReadError:  # a ledger its broker has yet to migrate, or one being replaced
        return []
    finally:
        conn.close()


def _address(sandbox: object) -> str:
    try:
        return str(sandbox.base_url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # not launched yet: the full screen will say where
        return "starting"


class QueuePreview(Vertical):
    """The first frame: what the approvals screen will show, without its keys."""

    DEFAULT_CSS = """
    QueuePreview Header {
        dock: none;
    }
    QueuePreview #preview-status {
        padding: 0 1;
        color: $text-muted;
    }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="queue-preview")
        self.runtime = runtime

    def compose(self) -> ComposeResult:
        if self.runtime.service is None:  # no service configured: the embedded sandbox
            yield SandboxBanner(_address(self.runtime.sandbox), id="sandbox-banner")
        yield from heading()
        yield Static(STARTING, id="preview-status", markup=False)
        yield RequestQueue(id="preview-queue")

    def on_mount(self) -> None:
        try:
            url = self.runtime.resolved_ledger_url()
        except Exception:  # settings the start will refuse, and say why: no queue before
            return
        page = first_page(self.runtime.ledger_path, url)
        self.query_one(RequestQueue).show(page, self.runtime.clock(), palette(self.app))
