"""The `[notify]` table of settings.toml: where the console tells an operator who is away.

    [notify]
    waiting_after_s = 120        # a request pending longer than this
    events = ["waiting", "policy_error", "awaiting_funds", "budget_warn"]   # default: all
    max_per_minute = 30          # notices a minute, each sent to every webhook; beyond: dropped
    desktop = true               # the terminal's desktop notification (true, false, "osc9",
                                 # "osc777"; absent: where the terminal is known to show one)

    [[notify.webhook]]
    url = "https://example.com/hook"      # or url_env = "NAME": the address from the environment
    format = "json"                       # json (signed), slack, ntfy
    secret_env = "SVC_NOTIFY_SECRET"      # json: the HMAC key (required); ntfy: the topic's
    # secret_file = "~/.config/svc-notify.key"   # access token (optional), sent as a bearer;
                                                 # from the environment or an owner-only file

A webhook's address may itself be a credential (Slack's are), so no message here ever repeats one;
errors name the table, the webhook's number and the key. Secrets are read once, here, so a missing
one stops the console before anything starts rather than failing at the first notice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from svc_console.config.errors import SettingsError
from svc_console.config.settings_file import read_settings
from svc_console.core.private_files import NotPrivate, read_private

EVENTS = ("waiting", "policy_error", "awaiting_funds", "budget_warn")
FORMATS = ("json", "slack", "ntfy")
Format = Literal["json", "slack", "ntfy"]
Desktop = Literal["osc9", "osc777"]
MIN_SECRET_CHARS = 16
_KEYS = {"waiting_after_s", "events", "max_per_minute", "desktop", "webhook"}
_HOOK_KEYS = {"url", "url_env", "format", "secret_env", "secret_file"}


@dataclass(frozen=True)
class Webhook:
    url: str = field(repr=False)  # may hold a token: never logged, only `host`
    format: Format
    secret: str | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "?"


@dataclass(frozen=True)
class NotifySettings:
    webhooks: tuple[Webhook, ...] = ()
    waiting_after_s: float = 120.0
    events: frozenset[str] = frozenset(EVENTS)
    max_per_minute: int = 30
    # True: on, with OSC 9 unless the terminal is known to want OSC 777; None: decided from the
    # terminal's name.
    desktop: bool | Desktop | None = None


def notify_settings(path: Path, environ: Mapping[str, str] | None = None) -> NotifySettings:
    """The `[notify]` table, checked, its secrets read; an absent table notifies no webhook."""
    env = os.environ if environ is None else environ
    table = read_settings(path).get("notify", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [notify] must be a table")
    where = f"{path}: [notify]"
    _only(table, _KEYS, where)
    waiting = table.get("waiting_after_s", 120)
    if not _number(waiting) or waiting <= 0:
        raise SettingsError(f"{where} waiting_after_s must be a number of seconds above 0")
    events = table.get("events", list(EVENTS))
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise SettingsError(f"{where} events must be a list of names: {', '.join(EVENTS)}")
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise SettingsError(
            f"{where} events: unknown {', '.join(unknown)}; known: {', '.join(EVENTS)}"
        )
    per_minute = table.get("max_per_minute", 30)
    if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 1:
        raise SettingsError(f"{where} max_per_minute must be a whole number of 1 or more")
    desktop = table.get("desktop")
    if desktop is not None and not isinstance(desktop, bool) and desktop not in ("osc9", "osc777"):
        raise SettingsError(f'{where} desktop must be true, false, "osc9" or "osc777"')
    hooks = table.get("webhook", [])
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise SettingsError(f"{where} webhook must be tables: [[notify.webhook]]")
    webhooks = tuple(
        _webhook(hook, f"{path}: [[notify.webhook]] #{n}", env, path.parent)
        for n, hook in enumerate(hooks, 1)
    )
    return NotifySettings(webhooks, float(waiting), frozenset(events), per_minute, desktop)


def _webhook(table: dict[str, Any], where: str, env: Mapping[str, str], home: Path) -> Webhook:
    _only(table, _HOOK_KEYS, where)
    if ("url" in table) == ("url_env" in table):
        raise SettingsError(f"{where} needs url or url_env (one of them)")
    url = table["url"] if "url" in table else _from_env(table["url_env"], "url_env", where, env)
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise SettingsError(f"{where} url must be an http:// or https:// address")
    if not urlsplit(url).hostname:
        raise SettingsError(f"{where} url has no host")
    kind = table.get("format", "json")
    if kind not in FORMATS:
        raise SettingsError(f"{where} format must be one of {', '.join(FORMATS)}")
    named = [key for key in ("secret_env", "secret_file") if key in table]
    if kind == "slack" and named:
        raise SettingsError(f"{where} {named[0]}: format slack takes no secret (its url is one)")
    if kind == "slack" or (kind == "ntfy" and not named):
        return Webhook(url, kind)
    if len(named) != 1:
        raise SettingsError(f"{where} format {kind} takes secret_env or secret_file (one of them)")
    if named[0] == "secret_env":
        secret = _from_env(table["secret_env"], "secret_env", where, env)
    else:
        secret = _from_file(table["secret_file"], where, home)
    if len(secret) < MIN_SECRET_CHARS:
        raise SettingsError(
            f"{where} {named[0]}: the secret must be at least {MIN_SECRET_CHARS} characters"
        )
    return Webhook(url, kind, secret)


def _from_env(name: object, key: str, where: str, env: Mapping[str, str]) -> str:
    if not isinstance(name, str) or not name:
        raise SettingsError(f"{where} {key} must name an environment variable")
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"{where} {key}: the environment variable {name} is not set")
    return value


def _from_file(name: object, where: str, home: Path) -> str:
    if not isinstance(name, str) or not name:
        raise SettingsError(f"{where} secret_file must be a file's path")
    file = Path(name).expanduser()
    file = file if file.is_absolute() else home / file
    try:
        value = read_private(file).strip()
    except NotPrivate as exc:
        raise SettingsError(f"{where} secret_file: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"{where} secret_file: cannot read {file} ({exc.strerror})") from None
    if not value:
        raise SettingsError(f"{where} secret_file: {file} is empty")
    return value


def _only(table: dict[str, Any], keys: set[str], where: str) -> None:
    unknown = set(table) - keys
    if unknown:
        raise SettingsError(
            f"{where} takes only {', '.join(sorted(keys))}; unknown: {', '.join(sorted(unknown))}"
        )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
