"""A local, real-HTTP implementation of the marketplace of SPEC.md, for tests, the demo and the
embedded sandbox. It never moves real money: balances are make-believe USDC held in memory, every
answer says `"sandbox": true`, and provider results are made up locally (`upstream`).

What it serves (one server; the wallet proxy's `apiBase` is the same address as `base_url`):

- `GET /`, `GET /api/health`: `{"sandbox": true, "service": "svc-console sandbox",
  "realMoney": false}`, no credentials needed.
- REST with `Authorization: Bearer <api_key>` (an `sk_live_` key): `GET /api/endpoints/{id}` (an
  `EndpointRecord`), `GET /api/endpoints/{id}/skill.md` (generated Markdown whose first line says it
  is a sandbox listing), `POST /api/search`.
- The wallet proxy with `Authorization: Bearer <api_token>` (a different secret):
  `POST /api/wallets/{username}/actions/x402/fetch` and `.../mpp/pay`.
- `GET /fund/{username}`, a funding page, and `POST /fund/{username}`, its form, which credits the
  balance.

Choices made where SPEC.md says "not shown":

- Error bodies: `{"error": {"code": WORD, "message": TEXT, ...details}, "sandbox": true}` on every
  route. Codes and statuses: 401 `UNAUTHORIZED` (missing or wrong key or token, with a
  `WWW-Authenticate` header), 403 `NOT_YOUR_WALLET` (token fine, username not the account's), 404
  `NOT_FOUND` (unknown endpoint id or route), 405 `METHOD_NOT_ALLOWED`, 413 `PAYLOAD_TOO_LARGE`
  (bodies above 1 MiB), 400 `INVALID_PARAMS` (search filters), 400 `INVALID_REQUEST` (proxy body),
  403 `NOT_IN_REGISTRY` (proxy target unknown or removed from the allowlisted registry), 400
  `WRONG_PROTOCOL` (x402 endpoint on `mpp/pay` or the reverse; `protocols` lists the right ones),
  422 `INVALID_INPUTS` (`fields: [{"field", "problem"}]`), 403 `APPROVAL_REQUIRED`, 409
  `PRICE_ABOVE_CEILING` (`priceUsdc`, `chain`, and `ceilingUsdc` or `settleableChains`), 409
  `IDEMPOTENCY_CONFLICT`, 402 `WALLET_UNFUNDED` (`fundingUrl`, `balanceUsdc`, `requiredUsdc`), 500
  `INTERNAL`. Amounts travel as decimal strings.
- Search: body filters `query` (every word must appear in the endpoint or provider name, the
  description or the tags), `domain_type`, `product_class`, `chain`, `verified_only`,
  `max_price_usdc` (a dynamic price counts at its maximum), `limit` (default 25; outside 1..50 is
  refused, not clamped); unknown filters are refused. Answer: `{"results", "total", "sandbox"}`,
  best matches first, then by qualityScore.
- Proxy body: `{endpointId, inputs, dryRun, approved, maxUsdc?, chain?, idempotencyKey?}`; the key
  may also come as an `Idempotency-Key` header (both given must agree). `dryRun` and `approved`
  must be JSON booleans; only `true` approves. Checks run in this order: credentials, username,
  body, registry, protocol, inputs (JSON Schema, unknown fields refused), then dry run, approval,
  idempotency replay, price and chain against the ceiling, balance.
- Dry run: a `DryRun` with the chain a call would settle on (MPP settles on `tempo`, x402 on the
  endpoint's first other chain), the fixed price or the middle of a dynamic range as the estimate,
  the range as `minUsdc`/`maxUsdc` (null for fixed prices), the schema's required fields, a small
  policy (`{"requiresApproval": true, "source": "sandbox default"}`) and the balance. Spends
  nothing and needs no approval.
- Price of a call: fixed endpoints cost their price; dynamic ones cost a point of their range (in
  steps of 0.0001 USDC) picked by a hash of the endpoint and inputs, so the same call always costs
  the same. `SandboxState.reprice_factor` multiplies every runtime price (never the estimate) to
  play a re-priced challenge.
- Execution answers an `Outcome` (camelCase keys, plus `chargeId`): status 200, the made-up
  provider body (JSON for most domain types, a PNG or WAV in base64 for image generation and
  speech, Markdown for document parsing), the charged price, the chain and a receipt with the
  CAIP-2 network, a fake transaction hash and the idempotency key.
- Idempotency: an executed key replays its stored answer byte for byte (header
  `Idempotency-Replayed: true`) and charges nothing; the same key for another endpoint, protocol
  or inputs is refused with `IDEMPOTENCY_CONFLICT`. Refused calls store nothing, so a retry after
  funding executes. A call without a key gets a fresh one.
- Funding: `fundingUrl` is `<base_url>/fund/<username>`, an HTML page that says no real money
  moves, with a form (field `amount`, default 10, at most 10 000 USDC; a hidden per-server token
  keeps other pages from posting it) that credits the balance and shows the new one.

Nothing is imported here, so importing the package stays cheap; use `sandbox.server`,
`sandbox.state`, `sandbox.app` and `sandbox.catalog` directly.
"""
