"""Accounts of the sandbox: one-time codes by e-mail, API keys, OAuth access tokens, wallet
connections and the account wallets (real keys, made-up money).

- A one-time code has 6 digits, lives 10 minutes, works once and only for the flow it was sent for
  (`login` or `connect`). It is delivered by the outbox and kept here only as a keyed hash.
- A login (`verify-otp`, `svc_auth_complete`) issues a fresh `sk_live_` key each time; earlier keys
  stay valid (the sandbox revokes nothing). The first login of an address also returns
  `walletConfig`: an EVM key (eth-account) and a Solana key (ed25519, base58). The sandbox forgets
  the private keys once they have been shown: they are shown exactly once (`sandbox.wallet_keys`).
- A wallet connection (`connect/complete`) binds a chosen username to the address's account and
  issues an `apiToken` for the wallet proxy. Every wallet draws on the one sandbox balance.
- The state's own credentials (`state.api_key`, `state.api_token`, `state.username`) belong to a
  built-in account without an e-mail address and stay valid beside every issued one.

Secrets are compared by hash, never logged, never part of an exception message or a repr.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from svc_console.sandbox.outbox import Outbox
from svc_console.sandbox.skills import DEFAULT_SKILLS_MD, MAX_SKILLS_BYTES
from svc_console.sandbox.wallet_keys import WalletKeys

CODE_DIGITS = 6
CODE_LIFETIME_S = 600
# Ten wrong guesses in a million: a code is dead long before guessing could find it.
CODE_MAX_FAILURES = 5
# Codes one address may be sent per lifetime window; more is refused (TOO_MANY_CODES).
CODES_PER_WINDOW = 5
TOKEN_LIFETIME_S = 3600
SCOPES = {
    "mcp:tools": "call every tool of the MCP endpoint",
    "account:read": "read wallets, usage and policies (GET /api/agent/...)",
}
DEFAULT_SCOPE = "mcp:tools"
BUILTIN_AGENT_ID = "agent_sandbox"

Purpose = Literal["login", "connect"]
_EMAIL = re.compile(r"^[^@\s\"<>()\[\],;:\\]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}$")
_USERNAME = re.compile(r"^[a-z0-9][a-z0-9_-]{2,31}$")
_SUBJECTS = {
    "login": "Your svc-console sandbox sign-in code",
    "connect": "Your svc-console sandbox wallet connection code",
}


class AccountError(Exception):
    """A refusal of the account flows: `code` is one word, `status` the HTTP status."""

    def __init__(self, status: int, code: str, message: str, **details: Any):
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


# --- checks of what callers send -------------------------------------------------------------


def normal_email(value: object) -> str:
    """The address, trimmed and lower-cased; raises ValueError when it is not one."""
    if not isinstance(value, str) or len(value) > 254:
        raise ValueError("must be an e-mail address (a string of at most 254 characters)")
    email = value.strip().lower()
    if not _EMAIL.match(email):
        raise ValueError("must be an e-mail address such as name@example.com")
    return email


def check_code(value: object) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"\d{6}", value.strip()):
        raise ValueError("must be the 6-digit code from the e-mail, as a string")
    return value.strip()


def check_username(value: object) -> str:
    if not isinstance(value, str) or not _USERNAME.match(value):
        raise ValueError(
            "must be 3 to 32 characters: lower-case letters, digits, '-' or '_',"
            " starting with a letter or digit"
        )
    return value


# --- records -----------------------------------------------------------------------------------


@dataclass
class _Code:
    digest: bytes
    sent_at: float
    used: bool = False
    failures: int = 0

    @property
    def locked(self) -> bool:
        return self.failures >= CODE_MAX_FAILURES


@dataclass
class _Account:
    agent_id: str
    email: str | None
    created_at: float
    wallet: WalletKeys | None = None
    wallet_config_shown: bool = False
    usernames: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Token:
    agent_id: str
    scopes: frozenset[str]
    expires_at: float


@dataclass(frozen=True)
class CodeSent:
    email: str
    purpose: Purpose
    expires_in_s: int


@dataclass(frozen=True)
class Login:
    api_key: str = field(repr=False)
    agent_id: str = ""
    wallet_config: dict[str, Any] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Connection:
    username: str
    api_token: str = field(repr=False)
    agent_id: str = ""
    addresses: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AccessToken:
    access_token: str = field(repr=False)
    scope: str = ""
    expires_in: int = TOKEN_LIFETIME_S
    token_type: str = "Bearer"


@dataclass(frozen=True)
class Caller:
    """Who a credential belongs to, and what it may do."""

    agent_id: str
    scopes: frozenset[str]
    kind: Literal["api_key", "oauth"]


class BuiltinAccount(Protocol):
    """What the accounts need of the sandbox state (`SandboxState` is one): the lock every change
    takes, and the credentials of the built-in account, read on each use so a replaced key counts
    at once. A protocol, so this module need not import the state that owns it."""

    lock: Any
    username: str
    api_key: str
    api_token: str


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Accounts:
    """Everything the account routes and the MCP tools ask about who is calling.

    `clock` (seconds, like `time.time`) may be replaced, e.g. by a test moving time by hand.
    Every method is thread-safe through the state's lock.
    """

    def __init__(
        self,
        state: BuiltinAccount,
        outbox: Outbox,
        *,
        clock: Callable[[], float] = time.time,
    ):
        self._state = state
        self.outbox = outbox
        self.clock = clock
        self._pepper = secrets.token_bytes(32)
        self._codes: dict[tuple[Purpose, str], list[_Code]] = {}
        self._accounts: dict[str, _Account] = {}  # agent id -> account
        self._by_email: dict[str, str] = {}  # e-mail -> agent id
        self._keys: dict[str, str] = {}  # sha256 of an issued API key -> agent id
        self._tokens: dict[str, _Token] = {}  # sha256 of an OAuth access token -> token
        self._wallet_tokens: dict[str, str] = {}  # sha256 of an apiToken -> username
        self._owners: dict[str, str] = {}  # username -> agent id
        self._skills_md = DEFAULT_SKILLS_MD
        self._accounts[BUILTIN_AGENT_ID] = _Account(BUILTIN_AGENT_ID, None, self.clock())

    @property
    def _lock(self) -> Any:
        return self._state.lock

    # --- SKILLS.md -------------------------------------------------------------------------

    @property
    def skills_md(self) -> str:
        with self._lock:
            return self._skills_md

    @skills_md.setter
    def skills_md(self, text: str) -> None:
        if not isinstance(text, str) or len(text.encode("utf-8")) > MAX_SKILLS_BYTES:
            raise ValueError(f"SKILLS.md must be text of at most {MAX_SKILLS_BYTES} bytes")
        with self._lock:
            self._skills_md = text

    # --- one-time codes ----------------------------------------------------------------------

    def _code_digest(self, purpose: Purpose, email: str, code: str) -> bytes:
        return hmac.new(self._pepper, f"{purpose}\0{email}\0{code}".encode(), "sha256").digest()

    def send_code(self, email: str, purpose: Purpose) -> CodeSent:
        """Makes a code and delivers it to the outbox. A newer code replaces the older ones."""
        email = normal_email(email)
        now = self.clock()
        with self._lock:
            history = self._codes.setdefault((purpose, email), [])
            recent = [c for c in history if now - c.sent_at < CODE_LIFETIME_S]
            if len(recent) >= CODES_PER_WINDOW:
                wait = int(CODE_LIFETIME_S - (now - recent[0].sent_at)) + 1
                raise AccountError(
                    429,
                    "TOO_MANY_CODES",
                    f"{CODES_PER_WINDOW} codes were sent to this address in the last"
                    f" {CODE_LIFETIME_S // 60} minutes; use the latest or retry in {wait} s",
                    retryAfterSeconds=wait,
                )
            code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
            history.append(_Code(self._code_digest(purpose, email, code), now))
            del history[:-20]  # enough to recognise a reused code, bounded
            what = "sign in" if purpose == "login" else "connect your agent wallet"
            body = (
                f"Your svc-console sandbox code to {what} is {code}.\n\n"
                f"It expires in {CODE_LIFETIME_S // 60} minutes and works once.\n"
                "SANDBOX: no real e-mail was sent and no real money moves.\n"
            )
            self.outbox.deliver(
                to=email, subject=_SUBJECTS[purpose], body=body, purpose=purpose, sent_at=now
            )
        return CodeSent(email=email, purpose=purpose, expires_in_s=CODE_LIFETIME_S)

    def _redeem(self, purpose: Purpose, email: str, code: str) -> None:
        """Consumes the code or raises AccountError saying exactly why it cannot be used."""
        now = self.clock()
        history = self._codes.get((purpose, email))
        if not history:
            raise AccountError(
                400,
                "OTP_NOT_REQUESTED",
                "no code was sent to this address for this flow; request one first",
            )
        digest = self._code_digest(purpose, email, code)
        latest = history[-1]
        match = next((c for c in reversed(history) if hmac.compare_digest(c.digest, digest)), None)
        if match is not None and match.used:
            raise AccountError(400, "OTP_USED", "this code was already used; request a new one")
        if match is not None and match is not latest:
            raise AccountError(
                400, "OTP_SUPERSEDED", "a newer code was sent to this address; use that one"
            )
        if latest.used:
            raise AccountError(400, "OTP_INVALID", "the code is wrong; request a new one")
        if latest.locked:
            raise AccountError(
                400, "OTP_LOCKED", "too many wrong codes were tried; request a new one"
            )
        if now - latest.sent_at >= CODE_LIFETIME_S:
            raise AccountError(
                400,
                "OTP_EXPIRED",
                f"the code expired ({CODE_LIFETIME_S // 60} minutes); request a new one",
            )
        if match is None:
            latest.failures += 1
            left = CODE_MAX_FAILURES - latest.failures
            raise AccountError(
                400,
                "OTP_INVALID",
                f"the code is wrong; {left} attempt(s) left"
                if left
                else "the code is wrong; no attempts left, request a new one",
                attemptsLeft=left,
            )
        latest.used = True

    # --- login and connection ------------------------------------------------------------

    def _account_for(self, email: str) -> _Account:
        agent_id = self._by_email.get(email)
        if agent_id is not None:
            return self._accounts[agent_id]
        account = _Account(
            agent_id="agent_" + secrets.token_hex(8), email=email, created_at=self.clock()
        )
        self._accounts[account.agent_id] = account
        self._by_email[email] = account.agent_id
        return account

    def _wallet(self, account: _Account) -> WalletKeys:
        if account.wallet is None:
            account.wallet = WalletKeys.create()
            if account.email is None:
                # The built-in account never logs in, so its keys could never be shown.
                account.wallet = account.wallet.forget_private_keys()
        return account.wallet

    def login(self, email: str, code: str) -> Login:
        """`verify-otp`: a fresh API key; `walletConfig` on the address's first login only."""
        email, code = normal_email(email), check_code(code)
        with self._lock:
            self._redeem("login", email, code)
            account = self._account_for(email)
            wallet = self._wallet(account)
            wallet_config = None
            if not account.wallet_config_shown:
                wallet_config = wallet.config()
                account.wallet_config_shown = True
                account.wallet = wallet.forget_private_keys()
            api_key = "sk_live_" + secrets.token_urlsafe(24)
            self._keys[_hash(api_key)] = account.agent_id
        return Login(api_key=api_key, agent_id=account.agent_id, wallet_config=wallet_config)

    def connect(self, email: str, username: str, code: str) -> Connection:
        """`connect/complete`: binds `username` to the address's account, issues an apiToken."""
        email, code = normal_email(email), check_code(code)
        username = check_username(username)
        with self._lock:
            owner = self._owner_of(username)
            agent_id = self._by_email.get(email)
            if owner is not None and owner != agent_id:
                # Checked before the code is spent, so the operator can pick another name.
                raise AccountError(409, "USERNAME_TAKEN", "that username belongs to another wallet")
            self._redeem("connect", email, code)
            account = self._account_for(email)
            wallet = self._wallet(account)
            if username not in account.usernames:
                account.usernames.append(username)
            self._owners[username] = account.agent_id
            api_token = secrets.token_urlsafe(32)
            self._wallet_tokens[_hash(api_token)] = username
        return Connection(
            username=username,
            api_token=api_token,
            agent_id=account.agent_id,
            addresses=wallet.addresses(),
        )

    # --- credentials -----------------------------------------------------------------------

    def _owner_of(self, username: str) -> str | None:
        if username == self._state.username:
            return BUILTIN_AGENT_ID
        return self._owners.get(username)

    def api_key_agent(self, key: str | None) -> str | None:
        """The agent an `sk_live_` key belongs to, or None."""
        if not key or not key.startswith("sk_live_"):
            return None
        if hmac.compare_digest(key.encode(), self._state.api_key.encode()):
            return BUILTIN_AGENT_ID
        with self._lock:
            return self._keys.get(_hash(key))

    def caller(self, bearer: str | None) -> Caller | None:
        """Who presents this bearer credential: an API key (every scope) or a live OAuth token."""
        agent_id = self.api_key_agent(bearer)
        if agent_id is not None:
            return Caller(agent_id, frozenset(SCOPES), "api_key")
        if not bearer:
            return None
        with self._lock:
            token = self._tokens.get(_hash(bearer))
            if token is None:
                return None
            if self.clock() >= token.expires_at:
                del self._tokens[_hash(bearer)]
                return None
        return Caller(token.agent_id, token.scopes, "oauth")

    def check_mcp_credential(self, bearer: str | None) -> bool:
        caller = self.caller(bearer)
        return caller is not None and "mcp:tools" in caller.scopes

    def issue_token(self, api_key: str | None, scope: str | None) -> AccessToken:
        """OAuth 2.0 client credentials: the API key is the client secret. Raises AccountError
        with the RFC 6749 error word as `code` (`invalid_client`, `invalid_scope`)."""
        agent_id = self.api_key_agent(api_key)
        if agent_id is None:
            raise AccountError(401, "invalid_client", "the client secret is not a valid API key")
        wanted = (scope or DEFAULT_SCOPE).split()
        unknown = [s for s in wanted if s not in SCOPES]
        if unknown or not wanted:
            raise AccountError(
                400,
                "invalid_scope",
                "unknown scope(s): " + " ".join(s[:40] for s in unknown) if unknown else "no scope",
            )
        granted = frozenset(wanted)
        access_token = "sbx_at_" + secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            # Expired tokens are dropped as new ones are made, so the table stays small.
            for digest in [d for d, t in self._tokens.items() if t.expires_at <= now]:
                del self._tokens[digest]
            self._tokens[_hash(access_token)] = _Token(agent_id, granted, now + TOKEN_LIFETIME_S)
        return AccessToken(access_token=access_token, scope=" ".join(sorted(granted)))

    def wallet_owner(self, api_token: str | None) -> str | None:
        """The username a wallet proxy `apiToken` belongs to, or None."""
        if not api_token:
            return None
        if hmac.compare_digest(api_token.encode(), self._state.api_token.encode()):
            return self._state.username
        with self._lock:
            return self._wallet_tokens.get(_hash(api_token))

    def has_wallet(self, username: str) -> bool:
        with self._lock:
            return self._owner_of(username) is not None

    # --- what an agent can look up ---------------------------------------------------------

    def agent(self, agent_id: str) -> dict[str, Any]:
        """The account's public side: id, usernames and wallet addresses (never a private key)."""
        with self._lock:
            account = self._accounts[agent_id]
            wallet = self._wallet(account)
            usernames = list(account.usernames)
            if agent_id == BUILTIN_AGENT_ID:
                usernames.insert(0, self._state.username)
            return {
                "agentId": agent_id,
                "usernames": usernames,
                "addresses": wallet.addresses(),
            }

    def payer_addresses(self) -> set[str]:
        """The EVM addresses of every account wallet made so far (lower-cased): the payers the
        sandbox expects. Any valid signer is still accepted."""
        with self._lock:
            return {
                account.wallet.evm_address.lower()
                for account in self._accounts.values()
                if account.wallet is not None
            }
