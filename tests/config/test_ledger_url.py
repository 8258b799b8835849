"""Where a team's ledger lives: SVC_LEDGER_URL, else `[ledger] url` in settings.toml, for the real
ledger only (sandbox play stays in its local file); a URL is never shown with its password."""

from __future__ import annotations

import pytest

from svc_console.config.errors import SettingsError
from svc_console.config.ledger_url import ledger_url
from svc_console.config.paths import Paths
from svc_console.config.service import configured_ledger_url
from svc_console.ledger.engine import url_shown

URL = "postgresql://svc@db.example/ledger"


def test_the_environment_comes_before_the_settings(paths: Paths):
    paths.settings.write_text('[ledger]\nurl = "postgresql://other/ledger"\n')
    assert ledger_url(paths, {"SVC_LEDGER_URL": URL}) == URL
    assert ledger_url(paths, {}) == "postgresql://other/ledger"
    paths.settings.unlink()
    assert ledger_url(paths, {}) is None


@pytest.mark.parametrize(
    ("settings", "env", "error"),
    [
        ("", {"SVC_LEDGER_URL": "sqlite:///x.db"}, "SVC_LEDGER_URL must be a postgresql:// URL"),
        ('[ledger]\nurl = "mysql://x"\n', {}, "[ledger] url must be a postgresql:// URL"),
        ("[ledger]\nurl = 5\n", {}, "[ledger] url must be a postgresql:// URL"),
        ('[ledger]\npath = "x"\n', {}, "[ledger] takes only url"),
    ],
)
def test_what_is_not_a_postgresql_url_is_refused(paths: Paths, settings, env, error):
    paths.settings.write_text(settings)
    with pytest.raises(SettingsError, match=error.replace("[", r"\[").replace("]", r"\]")):
        ledger_url(paths, env)


def test_only_the_real_ledger_goes_to_postgresql(paths: Paths):
    env = {"SVC_LEDGER_URL": URL}
    assert configured_ledger_url(paths, env) is None  # no service: the sandbox's own file
    assert configured_ledger_url(paths, {**env, "SVC_BASE_URL": "https://svc.example"}) == URL


def test_a_url_is_shown_without_its_password():
    shown = url_shown("postgresql://svc:s3cret@db.example:5433/ledger?sslmode=require")
    assert shown == "postgresql://svc:***@db.example:5433/ledger?sslmode=require"
    assert url_shown(URL) == URL
