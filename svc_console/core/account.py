"""The marketplace account as the console reads it: the e-mail login, the wallet connection, OAuth
access tokens, the agent's wallets and its active policy (camelCase on the wire).

Every secret (`apiKey`, `apiToken`, access tokens, private keys) is a `SecretStr`: its repr, its
`str()` and a JSON dump show `**********`, so a model that reaches a log line or a traceback leaks
nothing. `reveal()` methods hand the secrets over on purpose, for the credentials store only.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr

from svc_console.core.models import Wire
from svc_console.core.money import Usdc


class CodeSent(Wire):
    """`send-otp` / `connect/start` / `svc_auth_start`: a 6-digit code went to the address."""

    sent: bool
    email: str
    expires_in_seconds: int = Field(alias="expiresInSeconds")


class KeyPair(Wire):
    address: str
    private_key: SecretStr = Field(alias="privateKey")


class WalletConfig(Wire):
    """`walletConfig` of the first login: the account wallet's keys, shown exactly once."""

    evm: KeyPair
    solana: KeyPair
    chains: dict[str, str] = Field(default_factory=dict, description="chain -> evm or solana")

    def reveal(self) -> dict[str, Any]:
        """The wire form with the private keys, for `Credentials.save_wallet_config` only."""
        return {
            "evm": {
                "address": self.evm.address,
                "privateKey": self.evm.private_key.get_secret_value(),
            },
            "solana": {
                "address": self.solana.address,
                "privateKey": self.solana.private_key.get_secret_value(),
            },
            "chains": dict(self.chains),
        }


class AgentLogin(Wire):
    """`verify-otp` / `svc_auth_complete`."""

    api_key: SecretStr = Field(alias="apiKey")
    agent_id: str = Field(alias="agentId")
    mcp_server_url: str = Field(alias="mcpServerUrl")
    first_login: bool = Field(False, alias="firstLogin")
    wallet_config: WalletConfig | None = Field(None, alias="walletConfig")


class WalletConnection(Wire):
    """`connect/complete`: the wallet proxy's credential and the addresses per chain."""

    username: str
    api_token: SecretStr = Field(alias="apiToken")
    api_base: str = Field(alias="apiBase")
    funding_url: str = Field(alias="fundingUrl")
    wallets: dict[str, str] = Field(description="chain -> address: base, solana, ethereum, tempo")
    agent_id: str | None = Field(None, alias="agentId")


class AccessToken(Wire):
    """`POST /oauth/token` (RFC 6749 names, snake_case on the wire)."""

    access_token: SecretStr
    token_type: str
    scope: str = ""
    expires_in: int | None = None

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.scope.split())


class WalletAddress(Wire):
    chain: str
    network: str
    address: str
    asset: str = "USDC"


class AgentWallets(Wire):
    """`GET /api/agent/wallets`. `pooled`: one balance backs every chain (not a sum per chain)."""

    agent_id: str = Field(alias="agentId")
    usernames: list[str] = Field(default_factory=list)
    wallets: list[WalletAddress]
    balance_usdc: Usdc = Field(alias="balanceUsdc")
    pooled: bool = False

    def address(self, chain: str) -> str | None:
        return next((w.address for w in self.wallets if w.chain == chain), None)


class PolicyBlockRules(Wire):
    line: int = Field(ge=1, description="the line of the block's opening fence in SKILLS.md")
    rules: dict[str, Any]


class PolicyProblem(Wire):
    line: int
    message: str


class ActivePolicy(Wire):
    """`GET /api/agent/policies`: the service's policy, read from the agent's SKILLS.md."""

    source: str
    sha256: str
    valid: bool = True
    policy: dict[str, Any] | None = None
    blocks: list[PolicyBlockRules] = Field(default_factory=list)
    errors: list[PolicyProblem] = Field(default_factory=list)
    sandbox: bool = False
