"""Every shell example of the README and the guide runs, as written, against a sandbox: a home
of its own where `svc-console serve` runs (the broker and its embedded sandbox) and
`svc-console sandbox` serves the sandbox alone (its address put where the examples say
127.0.0.1:8402), in a folder holding a SKILLS.md as the policy examples expect. An example that
exits non-zero, or prints a traceback, fails by its page and line. One that needs more than a
sandbox says what in its title (docs/tools/examples.py) and is not run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "tools"))

import examples  # noqa: E402

from svc_console.demo import POLICY  # noqa: E402
from svc_console.services.broker_probe import running_broker  # noqa: E402

RUNNABLE = [example for example in examples.all_examples() if example.needs is None]
BIN = Path(sys.executable).parent


def environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SVC_")}
    env |= {"SVC_CONSOLE_HOME": str(home), "PATH": f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"}
    return env


@pytest.fixture(scope="module")
def sandbox_home() -> Iterator[tuple[Path, str]]:
    """The home every example runs in: a broker serving it, the sandbox alone beside it; yields
    the home and the sandbox's address."""
    home = Path(tempfile.mkdtemp(prefix="svc-ex-"))
    env = environment(home)
    started = []
    said_by_serve = home.parent / f"{home.name}.serve.log"  # outside the home, which it checks
    try:
        serve = subprocess.Popen(
            [BIN / "svc-console", "serve"], env=env, stdout=subprocess.DEVNULL,
            stderr=said_by_serve.open("w"),
        )  # fmt: skip
        started.append(serve)
        alone = subprocess.Popen(
            [BIN / "svc-console", "sandbox", "--port", "0"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        started.append(alone)
        said = alone.stdout.readline() if alone.stdout else ""
        address = re.search(r"listening on (http://\S+)", said)
        assert address, f"svc-console sandbox said {said!r}"
        deadline = time.monotonic() + 120
        while running_broker(home / "operator.sock") is None:  # the broker answers: it is up
            assert serve.poll() is None, said_by_serve.read_text()
            assert time.monotonic() < deadline, "svc-console serve did not start"
            time.sleep(0.1)
        yield home, address[1]
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
        said_by_serve.unlink(missing_ok=True)


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda example: example.name)
def test_the_example_runs(example: examples.Example, sandbox_home, tmp_path: Path):
    home, sandbox = sandbox_home
    (tmp_path / "SKILLS.md").write_text(POLICY)  # the reader's own policy file
    code = example.code.replace("localhost:8402", sandbox.removeprefix("http://"))
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code], cwd=tmp_path, env=environment(home),
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    output = done.stdout[-2000:] + done.stderr[-2000:]
    said = f"{example.name}:\n{code}\nexit {done.returncode}\n{output}"
    assert done.returncode == 0, said
    assert "Traceback" not in done.stderr, said


def test_every_example_not_run_says_what_it_needs():
    """A title reads "needs …" with what is missing here; and some examples do run."""
    others = [example for example in examples.all_examples() if example.needs is not None]
    assert RUNNABLE and others
    for example in others:
        assert len(example.needs.split()) >= 2, f"{example.name}: needs what?"
