"""The guide builds with MkDocs in strict mode, as `make docs` and `.ci/run` build it: a link to
a page or an anchor that is not there, a page left out of the navigation or a snippet that
cannot be found fails here, with MkDocs' own warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_guide_builds_without_a_warning(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="mkdocs is installed by the docs extra")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert done.returncode == 0 and not warnings, done.stderr[-3000:]
    assert (tmp_path / "site" / "command-line" / "index.html").exists()
