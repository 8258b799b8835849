"""The work-arounds of `svc_console.tui.textual_fixes`, each in a process of its own with a time
limit: what they prevent is a console that never answers again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A toast whose notification ran out a millisecond before the toast was made, as happens when
# the console is busy; the app quits 0.2 s after mounting it, if its loop still runs.
LATE_TOAST = textwrap.dedent(
    """
    import sys, time
    from textual.app import App
    from textual.notifications import Notification
    from textual.widgets._toast import Toast
    if sys.argv[1] == "fixed":
        import svc_console.tui.textual_fixes

    class Late(App):
        async def on_mount(self):
            late = Notification("late", timeout=1.0, raised_at=time.time() - 1.001)
            await self.mount(Toast(late))
            self.set_timer(0.2, self.exit)

    Late().run(headless=True)
    print("answered")
    """
)


def run_late_toast(variant: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            [sys.executable, "-c", LATE_TOAST, variant],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        return None


def test_a_toast_made_after_its_notification_ran_out_does_not_freeze_the_console():
    done = run_late_toast("fixed")
    assert done is not None, "the console stopped answering"
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered"
