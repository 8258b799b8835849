"""Client of the marketplace's account routes: the e-mail login, the wallet connection, OAuth
client credentials, and the agent's wallets, usage and policies.

Secrets go in and come out as `SecretStr`; no exception raised here carries a secret or a code
(messages quote the service, which never echoes them).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr, ValidationError

from svc_console.core.account import (
    AccessToken,
    ActivePolicy,
    AgentLogin,
    AgentWallets,
    CodeSent,
    WalletConnection,
)
from svc_console.core.usage import UsagePage, iso_instant
from svc_console.market import errors, http

T = TypeVar("T")


class CodeRefused(errors.MarketError):
    """The one-time code cannot be used. `code` says why: OTP_INVALID (wrong; `attempts_left`),
    OTP_EXPIRED, OTP_USED, OTP_SUPERSEDED (a newer code was sent), OTP_LOCKED (too many wrong
    tries), OTP_NOT_REQUESTED. Every case but OTP_INVALID with attempts left needs a new code."""

    def __init__(self, message: str, *, code: str, attempts_left: int | None = None):
        super().__init__(message, code=code)
        self.attempts_left = attempts_left

    @property
    def needs_new_code(self) -> bool:
        return self.code != "OTP_INVALID" or not self.attempts_left


class TooManyCodes(errors.MarketError):
    code = "TOO_MANY_CODES"

    def __init__(self, message: str, retry_after_s: int | None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UsernameTaken(errors.MarketError):
    code = "USERNAME_TAKEN"


class InvalidRequest(errors.MarketError):
    """The service refused a field (`field` names it when it says which)."""

    code = "INVALID_PARAMS"

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class OAuthError(errors.MarketError):
    """`/oauth/token` refused: `code` is the RFC 6749 error (invalid_scope, ...)."""


def _secret(value: str | SecretStr | None) -> str | None:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _raise_for_error(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code, message = str(error.get("code") or ""), str(error.get("message") or "")
        if code.startswith("OTP_"):
            left = error.get("attemptsLeft")
            raise CodeRefused(
                message, code=code, attempts_left=left if isinstance(left, int) else None
            )
        if code == "TOO_MANY_CODES":
            wait = error.get("retryAfterSeconds")
            raise TooManyCodes(message, wait if isinstance(wait, int) else None)
        if code == "USERNAME_TAKEN":
            raise UsernameTaken(message)
        if code == "INVALID_PARAMS":
            field = error.get("field")
            raise InvalidRequest(message, field if isinstance(field, str) else None)
    elif isinstance(error, str):  # an RFC 6749 error of the token endpoint
        description = str(body.get("error_description") or error)  # type: ignore[union-attr]
        if response.status_code == 401:
            raise errors.Unauthorized(f"the token endpoint refused the client: {description}")
        raise OAuthError(description, code=error)
    http.raise_for_error(response)


def _parse(response: httpx.Response, build: Callable[[Any], T]) -> T:
    _raise_for_error(response)
    try:
        return build(response.json())
    except (ValueError, ValidationError, TypeError, KeyError) as exc:
        raise errors.MalformedResponse(
            f"unexpected answer from {response.url.path}: {type(exc).__name__}"
        ) from None


class AccountClient(http.LazyClient):
    """`base_url` is the service; `api_key` (an sk_live_ key or an account:read token) is needed
    only for wallets, usage and policies."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | SecretStr | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = 15.0,
    ):
        self._api_key = SecretStr(_secret(api_key) or "")
        self._options = {
            "base_url": base_url,
            "timeout": http.timeout(timeout_s),
            "transport": transport,
        }

    def __repr__(self) -> str:
        return f"AccountClient({str(self._options['base_url'])!r})"

    async def __aenter__(self) -> AccountClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _auth(self) -> dict[str, str]:
        key = self._api_key.get_secret_value()
        if not key:
            raise errors.Unauthorized("no API key: run svc-console login first")
        return {"Authorization": f"Bearer {key}"}

    async def _post(self, path: str, body: dict[str, Any], build: Callable[[Any], T]) -> T:
        response = await http.send(self._client, "POST", path, json=body)
        return _parse(response, build)

    # --- the e-mail login (backs svc_auth_start / svc_auth_complete) -----------------------

    async def send_otp(self, email: str) -> CodeSent:
        return await self._post(
            "/api/agent/auth/send-otp", {"email": email}, CodeSent.model_validate
        )

    async def verify_otp(self, email: str, otp_code: str | SecretStr) -> AgentLogin:
        body = {"email": email, "otp_code": _secret(otp_code)}
        return await self._post("/api/agent/auth/verify-otp", body, AgentLogin.model_validate)

    # --- the wallet connection --------------------------------------------------------------

    async def connect_start(self, email: str) -> CodeSent:
        return await self._post("/api/connect/start", {"email": email}, CodeSent.model_validate)

    async def connect_complete(
        self, email: str, username: str, otp: str | SecretStr
    ) -> WalletConnection:
        body = {"email": email, "username": username, "otp": _secret(otp)}
        return await self._post("/api/connect/complete", body, WalletConnection.model_validate)

    # --- OAuth 2.0 client credentials -----------------------------------------------------

    async def oauth_token(
        self, *, scope: str = "mcp:tools", api_key: str | SecretStr | None = None
    ) -> AccessToken:
        """An access token for `scope`, the API key being the client secret (HTTP Basic)."""
        secret = _secret(api_key) or self._api_key.get_secret_value()
        if not secret:
            raise errors.Unauthorized("no API key to exchange for a token")
        basic = base64.b64encode(f":{secret}".encode()).decode("ascii")
        response = await http.send(
            self._client,
            "POST",
            "/oauth/token",
            data={"grant_type": "client_credentials", "scope": scope},
            headers={"Authorization": f"Basic {basic}"},
        )
        return _parse(response, AccessToken.model_validate)

    # --- what the agent can read ------------------------------------------------------------

    async def wallets(self) -> AgentWallets:
        response = await http.send(self._client, "GET", "/api/agent/wallets", headers=self._auth())
        return _parse(response, AgentWallets.model_validate)

    async def usage(
        self, *, since: float | None = None, cursor: str | None = None, limit: int | None = None
    ) -> UsagePage:
        """One page of charges, oldest first; pass `page.next_cursor` back for the next."""
        params: dict[str, str] = {}
        if since is not None:
            params["since"] = iso_instant(since)
        if cursor is not None:
            params["cursor"] = cursor
        if limit is not None:
            params["limit"] = str(limit)
        response = await http.send(
            self._client, "GET", "/api/agent/usage", params=params, headers=self._auth()
        )
        return _parse(response, UsagePage.model_validate)

    async def policies(self) -> ActivePolicy:
        response = await http.send(self._client, "GET", "/api/agent/policies", headers=self._auth())
        return _parse(response, ActivePolicy.model_validate)
