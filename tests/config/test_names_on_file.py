"""Names as the registry and the operator accounts keep them: in one form, files written before
read in that form, a name that looks like another's refused with nothing changed; settings'
`[operator] name` in that form too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from svc_console.config.agent_registry import AgentRegistry, RegistryError
from svc_console.config.errors import SettingsError
from svc_console.config.operator_accounts import AccountsError, OperatorAccounts
from svc_console.config.operator_settings import console_operator
from svc_console.core.private_files import write_private


def test_an_operator_is_one_account_in_any_case_and_a_look_alike_is_refused(tmp_path: Path):
    accounts = OperatorAccounts(tmp_path / "operators.json")
    token = accounts.add("Alice")
    assert [a.name for a in accounts.accounts()] == ["alice"]
    before = (tmp_path / "operators.json").read_text()
    with pytest.raises(AccountsError, match="operator alice already has an account"):
        accounts.add("ALICE")
    with pytest.raises(AccountsError, match="operator name a1ice looks like operator alice"):
        accounts.add("a1ice")
    assert (tmp_path / "operators.json").read_text() == before
    assert accounts.authenticate("ALICE", token).name == "alice"
    assert accounts.pin().authenticate("Alice", token).name == "alice"
    accounts.remove("ALICE")
    assert accounts.removed("alice") and accounts.removed("Alice")


def test_files_written_before_names_had_one_form_are_read_in_it(tmp_path: Path):
    fields = {"token_sha256": "0" * 64, "created_at": 1.0}
    path = tmp_path / "agents.json"
    write_private(path, json.dumps({"agents": {"Trusted-Bot": fields}}))
    registry = AgentRegistry(path)
    assert [a.name for a in registry.agents()] == ["trusted-bot"]
    assert registry.holder("trusted-b0t") == "trusted-bot"
    write_private(path, json.dumps({"agents": {"Trusted-Bot": fields, "TRUSTED-BOT": fields}}))
    with pytest.raises(RegistryError, match="holds agent trusted-bot twice"):
        AgentRegistry(path).agents()


def test_the_tuis_operator_is_named_in_the_one_form(tmp_path: Path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[operator]\nname = "Bob"\n')
    assert console_operator(settings) == "bob"
    settings.write_text('[operator]\nname = "bob smith"\n')
    with pytest.raises(SettingsError, match="must be 1-64 letters"):
        console_operator(settings)
