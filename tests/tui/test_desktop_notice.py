"""The desktop notification beside the bell: OSC 9 or OSC 777 where the terminal shows one, with
text that cannot end the sequence and write its own."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from svc_console.config.notify_settings import NotifySettings
from svc_console.tui.desktop_notice import desktop_notice, sequence, supported

HOSTILE = "bot\x07\x1b]52;c;aGk=\x1b\\\x9c; rm -rf ~ " + "x" * 200


@pytest.mark.parametrize(
    ("environ", "setting", "kind"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, None, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, None, "osc9"),
        ({"TERM_PROGRAM": "ghostty"}, None, "osc9"),
        ({"TERM": "xterm-kitty"}, None, "osc9"),
        ({"TERM": "foot"}, None, "osc777"),
        ({"TERM": "xterm-256color"}, None, None),
        ({"TERM_PROGRAM": "iTerm.app", "TMUX": "/tmp/tmux-1/default,1,0"}, None, None),
        ({"TERM_PROGRAM": "iTerm.app"}, False, None),
        ({"TERM": "xterm-256color"}, True, "osc9"),
        ({"TERM": "foot"}, True, "osc777"),
        ({}, "osc777", "osc777"),
    ],
)
def test_written_only_where_the_terminal_shows_it(environ, setting, kind):
    assert supported(environ, setting) == kind


def test_the_sequences():
    assert sequence("osc9", "svc-console", "New request") == "\x1b]9;svc-console: New request\x07"
    assert (
        sequence("osc777", "svc-console", "New request")
        == "\x1b]777;notify;svc-console;New request\x07"
    )


@pytest.mark.parametrize("kind", ["osc9", "osc777"])
def test_text_cannot_end_the_sequence_and_is_short(kind):
    written = sequence(kind, "t;" + HOSTILE, HOSTILE)
    inner = written[len("\x1b]") : -1]
    assert written.endswith("\x07")
    assert not any(ch in inner for ch in "\x07\x1b\x9c\n")
    assert "<BEL><ESC>]52" in inner
    title, body = inner.split(";", 3)[2:] if kind == "osc777" else inner[2:].split(": ", 1)
    assert len(title) <= 40 and len(body) <= 80 and body.endswith("…")
    if kind == "osc777":
        assert title.startswith("t,bot")  # its `;` cannot move the split


class Driver:
    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, data: str) -> None:
        self.written.append(data)


def app(*, headless=False, desktop=None):
    runtime = SimpleNamespace(notify=NotifySettings(desktop=desktop))
    return SimpleNamespace(is_headless=headless, is_web=False, _driver=Driver(), runtime=runtime)


def test_desktop_notice_writes_to_the_terminal(monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("STY", raising=False)
    shown = app()
    assert desktop_notice(shown, "New request from bot") is True
    assert shown._driver.written == ["\x1b]9;svc-console: New request from bot\x07"]

    off = app(desktop=False)
    assert desktop_notice(off, "New request") is False and off._driver.written == []
    headless = app(headless=True)
    assert desktop_notice(headless, "New request") is False and headless._driver.written == []


def test_nothing_is_written_to_an_unknown_terminal(monkeypatch):
    monkeypatch.delenv("TERM_PROGRAM", raising=False)
    monkeypatch.delenv("KITTY_WINDOW_ID", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    unknown = app()
    assert desktop_notice(unknown, "New request") is False and unknown._driver.written == []
    forced = app(desktop=True)
    assert desktop_notice(forced, "New request") is True
    assert forced._driver.written == ["\x1b]9;svc-console: New request\x07"]
