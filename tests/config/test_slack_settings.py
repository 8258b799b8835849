"""`[slack]` in settings.toml: a channel's id and two tokens, kept in the environment or in
owner-only files; every mistake named in one line, never with a token in it, and `serve` refusing
such a file before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from svc_console.config.errors import SettingsError
from svc_console.config.slack_settings import API_URL, SlackSettings, slack_settings

BOT = "xoxb-1111-2222-abcdefABCDEF"
APP = "xapp-1-A111-2222-abcdef0123"
ENV = {"SVC_SLACK_BOT_TOKEN": BOT, "SVC_SLACK_APP_TOKEN": APP}
GOOD = """
[slack]
channel = "C0123456789"
bot_token_env = "SVC_SLACK_BOT_TOKEN"
app_token_env = "SVC_SLACK_APP_TOKEN"
"""


def write(home: Path, text: str) -> Path:
    path = home / "settings.toml"
    path.write_text(text)
    return path


def test_the_tokens_come_from_the_environment_and_are_never_shown(home):
    settings = slack_settings(write(home, GOOD), ENV)
    assert settings == SlackSettings("C0123456789", BOT, APP, API_URL)
    assert BOT not in repr(settings) and APP not in repr(settings)
    assert slack_settings(write(home, "[notify]\n"), ENV) is None  # no table: no Slack


def test_the_tokens_may_be_owner_only_files_under_the_home(home):
    for name, token in (("bot.token", BOT), ("app.token", APP)):
        (home / name).write_text(token + "\n")
        (home / name).chmod(0o600)
    text = (
        '[slack]\nchannel = "G0PRIVATE1"\nbot_token_file = "bot.token"\n'
        f'app_token_file = "{home / "app.token"}"\napi_url = "http://127.0.0.1:8080/api"\n'
    )
    settings = slack_settings(write(home, text), {})
    assert (settings.bot_token, settings.app_token) == (BOT, APP)
    assert settings.api_url == "http://127.0.0.1:8080/api/"
    (home / "bot.token").chmod(0o644)
    with pytest.raises(SettingsError, match=r"\[slack\] bot_token_file: .* readable by others"):
        slack_settings(write(home, text), {})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[slack]\nchanel = 'C1'\n", "[slack] takes only api_url, app_token_env"),
        ("slack = 3\n", "[slack] must be a table"),
        (GOOD.replace('"C0123456789"', '"#approvals"'), "channel must be a channel's id"),
        (GOOD.replace('bot_token_env = "SVC_SLACK_BOT_TOKEN"\n', ""), "needs bot_token_env or"),
        (
            GOOD + 'bot_token_file = "bot.token"\n',
            "needs bot_token_env or bot_token_file (one of them)",
        ),
        (GOOD.replace("SVC_SLACK_APP_TOKEN", "NOPE_UNSET"), "NOPE_UNSET is not set"),
        (GOOD.replace("SVC_SLACK_APP_TOKEN", "SVC_SLACK_BOT_TOKEN", 1), "starts with xapp-"),
        (GOOD.replace("SVC_SLACK_BOT_TOKEN", "SVC_SLACK_APP_TOKEN", 1), "starts with xoxb-"),
        (GOOD + 'api_url = "http://slack.example/api/"\n', "api_url must be an https://"),
        (GOOD + 'api_url = "ftp://127.0.0.1/"\n', "api_url must be an https://"),
    ],
)
def test_bad_settings_are_named_without_a_token(home, text, words):
    with pytest.raises(SettingsError) as error:
        slack_settings(write(home, text), ENV)
    assert words in str(error.value)
    assert BOT not in str(error.value) and APP not in str(error.value)


def test_serve_refuses_bad_slack_settings_in_one_line(home):
    write(home, GOOD.replace("SVC_SLACK_APP_TOKEN", "NOPE_UNSET"))
    done = subprocess.run(
        [sys.executable, "-m", "svc_console", "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "SVC_CONSOLE_HOME": str(home), **ENV},
    )
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0
    assert "[slack] app_token_env: the environment variable NOPE_UNSET is not set" in done.stderr
    assert not (home / "svc.sock").exists()
