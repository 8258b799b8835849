"""Logging to a rotated, owner-only file under SVC_CONSOLE_HOME; never to the terminal."""

import logging
import logging.handlers
import os
from pathlib import Path

from svc_console.core.private_files import ensure_private_dir

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    def _open(self):  # type: ignore[no-untyped-def]
        # Create log files owner-only: a log may name agents, endpoints and amounts.
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.close(fd)
        return super()._open()


def configure(log_dir: Path, level: int = logging.INFO) -> Path:
    ensure_private_dir(log_dir)
    path = log_dir / "svc-console.log"
    handler = _PrivateRotatingHandler(path, maxBytes=2_000_000, backupCount=5, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, logging.StreamHandler) and not isinstance(
            existing, logging.FileHandler
        ):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    # Third-party libraries log request URLs and headers at DEBUG; keep them out.
    for noisy in ("httpx", "httpcore", "uvicorn", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path
