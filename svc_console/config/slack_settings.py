"""The `[slack]` table of settings.toml: approvals from Slack over Socket Mode (no inbound address).

    [slack]
    channel = "C0123456789"                  # where requests waiting for an operator are posted
    bot_token_env = "SVC_SLACK_BOT_TOKEN"    # xoxb-...; or bot_token_file = "slack-bot.token"
    app_token_env = "SVC_SLACK_APP_TOKEN"    # xapp-... (connections:write); or app_token_file
    # api_url = "https://slack.com/api/"     # another Web API address (Slack for government)

The two tokens are kept as the webhooks' secrets are: in the environment, or in owner-only files
(a relative path is under SVC_CONSOLE_HOME); never in settings.toml itself, never printed. They
are read once, here, so a missing one stops the console before anything starts. Who may decide
from Slack is not said here: only Slack users linked to an operator account
(`svc-console operators link NAME --slack USER_ID`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from svc_console.config.errors import SettingsError
from svc_console.config.notify_settings import _from_env, _from_file, _only
from svc_console.config.settings_file import read_settings

API_URL = "https://slack.com/api/"
# Public channels are C..., private ones G... (older) or C...: Slack's ids, never names.
CHANNEL = re.compile(r"\A[CG][A-Z0-9]{2,20}\Z")
_KEYS = {"channel", "bot_token_env", "bot_token_file", "app_token_env", "app_token_file", "api_url"}
_PREFIX = {"bot": "xoxb-", "app": "xapp-"}


@dataclass(frozen=True)
class SlackSettings:
    channel: str
    bot_token: str = field(repr=False)
    app_token: str = field(repr=False)
    api_url: str = API_URL


def slack_settings(path: Path, environ: Mapping[str, str] | None = None) -> SlackSettings | None:
    """The `[slack]` table, checked, its tokens read; None when there is no such table."""
    env = os.environ if environ is None else environ
    table = read_settings(path).get("slack")
    if table is None:
        return None
    where = f"{path}: [slack]"
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table")
    _only(table, _KEYS, where)
    channel = table.get("channel")
    if not isinstance(channel, str) or not CHANNEL.match(channel):
        raise SettingsError(
            f"{where} channel must be a channel's id such as C0123456789 (the channel's details,"
            " at the bottom), not its name"
        )
    api_url = table.get("api_url", API_URL)
    if not isinstance(api_url, str) or not _safe_url(api_url):
        raise SettingsError(
            f"{where} api_url must be an https:// address (http:// on loopback only)"
        )
    return SlackSettings(
        channel,
        _token("bot", table, where, env, path.parent),
        _token("app", table, where, env, path.parent),
        api_url if api_url.endswith("/") else api_url + "/",
    )


def _token(kind: str, table: dict, where: str, env: Mapping[str, str], home: Path) -> str:
    keys = [f"{kind}_token_env", f"{kind}_token_file"]
    named = [key for key in keys if key in table]
    if len(named) != 1:
        raise SettingsError(f"{where} needs {keys[0]} or {keys[1]} (one of them)")
    key = named[0]
    if key.endswith("_env"):
        token = _from_env(table[key], key, where, env)
    else:
        try:
            token = _from_file(table[key], where, home)
        except SettingsError as exc:  # worded for the webhooks' secret_file: named as here
            raise SettingsError(str(exc).replace(" secret_file", f" {key}", 1)) from None
    if not token.startswith(_PREFIX[kind]):
        # Never the token itself: only what it should have looked like.
        raise SettingsError(f"{where} {key}: a {kind} token starts with {_PREFIX[kind]}")
    return token


def _safe_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False
