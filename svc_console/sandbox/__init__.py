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

Payments (`sandbox.x402`, `sandbox.mpp`, `sandbox.market_routes`; details in each module):

- x402 v2: a paid resource answers 402 with `PAYMENT-REQUIRED` (base64 of an x402 v2
  `PaymentRequired`: scheme `exact`, CAIP-2 network, amount in USDC atomic units, the network's
  USDC contract, `payTo`, `maxTimeoutSeconds` 300, `extra` with the token's EIP-712 name and
  version). `PAYMENT-SIGNATURE` is verified offline: EIP-3009 `TransferWithAuthorization`
  recovered with eth-account, recipient, exact amount, `validAfter < now < validBefore`, and the
  nonce never settled before for that payer and token (replay memory shared by every route). Only
  EVM networks settle; other listed networks are refused as `wrong_network`. Success answers
  `PAYMENT-RESPONSE` (an x402 `SettleResponse`, made-up transaction hash). Refusal reasons:
  `malformed`, `wrong_scheme`, `wrong_network`, `wrong_asset`, `wrong_recipient`, `wrong_amount`,
  `expired`, `not_yet_valid`, `invalid_signature`, `nonce_reused`, `insufficient_funds`,
  `unknown_proof`, `wrong_resource`; a refused payment debits nothing and consumes no nonce.
- Legacy inputs: `x_payment` is a v1 `X-PAYMENT` value (v1 network names such as `base`),
  verified like a v2 payment; `payment_proof` is a settlement this sandbox already made (its
  `PAYMENT-RESPONSE` value or transaction hash), accepted for the same resource and amount without
  a new charge, to re-deliver what it bought.
- MPP: `WWW-Authenticate: Payment` challenges (pympp, method `evm`, intent `charge`, Tempo chain
  4217 and its USDC, HMAC-bound to the sandbox, five minutes), `Authorization: Payment`
  credentials (an EIP-3009 authorization whose nonce is the challenge's hash), `Payment-Receipt`
  on success; a credential already used is refused with 403.
- `POST /api/market/{provider}/{path}`: a provider's endpoint called directly, no API key (the
  payment is the credential), registry and inputs checked first, then paid over the provider's
  protocols at the runtime price; `WALLET_UNFUNDED` (402) when the balance is short. Payees are
  per-provider addresses derived from the provider id.
- `POST /api/funding/checkout` (API key or wallet token; optional `amountUsdc`, `username`):
  201 `{checkoutUrl, fundingUrl, username, amountUsdc, balanceUsdc}`; the checkout address is
  the funding page with the amount filled in (`/fund/<username>?amount=5.00`).

Faults (`sandbox.faults`): a switch that injects `error` (5xx before the route runs), `latency`,
`drop` (the route runs, the connection is cut mid-body), `malformed` (the route runs, the body is
garbled), `reprice` (the runtime price times `factor`: the challenge asks more than the dry run)
and `delist` (a provider leaves the registry; clearing puts it back) on route groups (`proxy`,
`market`, `mcp`, `datasets`, `rest`, `funding`, `all`) or path globs, for the next `count` calls
or at a seeded `rate`. `POST`/`GET`/`DELETE /sandbox/faults` with the API key, or
`state.faults.add(...)`/`set(...)`/`clear()` from Python. ASGI middleware outside every route.

Catalogue, datasets and content (`sandbox.catalog`, `sandbox.datasets`, `sandbox.queries`,
`sandbox.publishing`, `sandbox.catalogue_routes`, `sandbox.content`; records in
`core.datasets` and `core.catalogue`):

- Seeded catalogues: 1,483 market providers (2,543 endpoints; every A1-A22 and B1-B6, every
  chain, both origins, verified and not, fixed and dynamic prices) and 364 datasets (every tier,
  modality, format; 14 categories) plus two publisher drafts. Deterministic, built once per
  process. Fixed ids: the three endpoints above, `ep_frameify_generate` (1.50 USDC), and
  `ds_fx_daily_rates` (free), `ds_news_headlines_2024` (standard, 0.25), `ds_court_opinions`
  (premium, 10), `ds_global_vessel_positions` (enterprise, 250), drafts `ds_draft_city_budgets`
  and `ds_draft_unlabelled_upload` (its analysis fails).
- Arguments: one pydantic model per tool (`DatasetQuery`, `MarketQuery`, `TryDatasetArgs`,
  `GetDatasetArgs`; `BrowseQuery` for the browse) checks MCP arguments, REST bodies and query
  parameters alike: unknown arguments refused, integers strict (`true` and `"10"` refused, 10.0
  accepted), out-of-range refused, never clamped. REST answers 400 `INVALID_PARAMS` with
  `fields: [{"argument", "problem"}]`; the message names the argument. `POST /api/search` uses
  `MarketQuery`.
- Dataset listing fields (camelCase): `id`, `title`, `description`, `tags`, `category`, `tier`,
  `modality`, `format`, `priceUsdc` (0 on free), `columns` (schema column names), `rowCount`,
  `sizeBytes`, `createdAt`, `updatedAt` (ISO dates), `downloads`, `publisher`, `license`,
  `qualitySignals`. Quality signals: `score` (0.4 completeness + 0.4 schema accuracy + 0.1 for
  few duplicates + 0.1 freshness), `completeness`, `schemaAccuracy`, `duplicateRate`,
  `freshnessDays`, `updateFrequency`, `verifiedPublisher`.
- Dataset query semantics: `query` needs every word (case-insensitive, substring) in the title,
  description or tags; `category` is an exact slug (an unknown one matches nothing);
  `required_fields` must all be columns (case-insensitive); `max_price_usdc` keeps prices at or
  below it; `sort_by` newest (createdAt), popular (downloads), price_asc, price_desc, ties by id.
  Answer: `{"datasets", "total", "limit", "sandbox"}`.
- Datacard (`card.json`, and in a trial): `datasetId`, `title`, `version`, `publisher`,
  `license`, `summary`, `intendedUse`, `limitations` (the first always says the data is made
  up), `provenance` {`sources`, `collection`, `updateFrequency`}, `columns` [{`name`, `type`,
  `description`, `nullable`}], `statistics` {`rowCount`, `columnCount`, `sizeBytes`,
  `nullRate`}, `quality` (the signals), `pricing` {`tier`, `priceUsdc`, `currency`,
  `protocols`, `networks`}, `analyzedAt`, `sandbox: true`.
- Trial (`try_dataset`): `{"datasetId", "preview": {"columns", "rows"} (5 rows, texts cut to 280
  characters), "coverage", "datacard"}`. Coverage report: `requiredFields` (as asked, duplicates
  dropped), `present`, `missing`, `coverage` (present/asked; 1.0 when nothing was asked),
  `complete`, `columns`.
- Content (`get_dataset`, access): `{datasetId, title, format, deliveredAs, mediaType, body,
  bodyEncoding, sha256, rowsDelivered, rowCount, chargedUsdc}`: a sample (25 rows, 3 documents)
  in the dataset's format; parquet travels as JSON Lines and PDF as plain text (`deliveredAs`
  says which), since the sandbox writes no binary files.
- REST: `GET /api/datasets` takes `search` (the tool's `query`), `tier`, `limit` and also
  `category`, `modality`, `format`, `max_price_usdc`, `required_fields` (comma-separated or
  repeated), `sort_by`; unknown or repeated parameters are refused. Every `/api/datasets*` and
  `/api/market/catalog` route needs the API key (401 otherwise). `GET /api/datasets/{id}` is the
  listing; unknown ids and unpublished drafts are 404 `NOT_FOUND` (`datasetId` in the body).
- Access (`POST /api/datasets/{id}/access`, optional JSON body `payment_signature`,
  `payment_proof`, `x_payment`; headers `PAYMENT-SIGNATURE` and `X-PAYMENT` also work): free
  tier 200 `{datasetId, tier, chargedUsdc, content}`; paid tier without payment 402
  `PAYMENT_REQUIRED` with the `PAYMENT-REQUIRED` header and the same object as
  `error.paymentRequired` (resource `<base_url>/api/datasets/{id}/access`, as `get_dataset`
  uses, on `eip155:8453`); a refused payment 402 `PAYMENT_INVALID` with `reason`, or
  `WALLET_UNFUNDED` with `fundingUrl`; paid 200 with `payment` (the settlement) and the
  `PAYMENT-RESPONSE` header.
- Publish states: `draft` → `processing` → `published`, or `failed` (with `reason`). Seeded
  datasets start published (`version` 1), drafts as draft (0). `POST .../process` answers 202
  `processing`; the analysis finishes the next time the state is read, so the first
  `publish-status` poll sees `published` (`datacardUrl` set, `version` + 1) or `failed`.
  Processing again while `processing` is 409 `PUBLISH_IN_PROGRESS`. A published draft is listed,
  searchable and readable from then on, in that sandbox only. Body: `{datasetId, state, version,
  reason, datacardUrl, history: [{state, at}]}`.
- Market browse (`GET /api/market/catalog`): providers ordered by name, `offset` (0 up) and
  `limit` (1..100, default 50), filters `query` (or `search`), `domain_type`, `product_class`,
  `chain`, `verified_only`, `max_price_usdc` (a provider matches when one endpoint passes them
  all), `origin`. Answer `{"providers", "total", "offset", "limit", "nextOffset", "sandbox"}`;
  each provider: `id`, `name`, `origin`, `verified`, `domainTypes`, `productClasses`, `chains`,
  `protocols`, `endpoints` (ids), `priceFromUsdc`, `priceToUsdc`, `qualityScore` (mean),
  `reliability` (lowest), `tags`.
- Content for answer engines, public: `/llms.txt` (Markdown site map), `/api/content/index`
  (`{title, description, entries: [{id, title, url, summary, kind}], counts}`),
  `/api/content/glossary` (`{terms: [{term, definition, seeAlso}]}`), `/api/content/tools`
  (`{tools: [{name, category, auth, cost, priceUsdc, description, readOnly, destructive}]}`, from
  `queries.TOOLS_SUMMARY`). Each says it is the sandbox.

Accounts (`sandbox.accounts`, `sandbox.outbox`, `sandbox.skills`, `sandbox.account_routes`):

- One-time codes: 6 digits, valid 10 minutes, one use, bound to their flow (`login` or
  `connect`); a newer code replaces the older ones; five wrong tries lock a code; at most five
  codes per address and flow in 10 minutes (429 `TOO_MANY_CODES`, `retryAfterSeconds`). The
  sandbox keeps only a keyed hash. Each code is one RFC 822 message (`From:
  no-reply@sandbox.invalid`, `X-Sandbox-Purpose: login|connect`) written owner-only as a `.eml`
  file into the outbox, `$SVC_CONSOLE_HOME/sandbox/outbox/` (`Paths.sandbox_outbox`;
  `SandboxState(outbox=...)` elsewhere), and nowhere else. Refusals, 400: `OTP_INVALID`
  (`attemptsLeft`), `OTP_EXPIRED`, `OTP_USED`, `OTP_SUPERSEDED`, `OTP_LOCKED`,
  `OTP_NOT_REQUESTED`; bad fields 400 `INVALID_PARAMS` naming the field (`field`), unknown fields
  refused.
- `POST /api/agent/auth/send-otp` and `POST /api/connect/start` take `{email}` and answer
  `{sent, email (trimmed, lower-case), expiresInSeconds: 600, delivery, sandbox}`.
- `POST /api/agent/auth/verify-otp` takes `{email, otp_code}` (`otp` also accepted) and answers
  `{apiKey, agentId, mcpServerUrl, firstLogin}` plus, on the address's first login only,
  `walletConfig = {evm: {address, privateKey (0x hex)}, solana: {address (base58 public key),
  privateKey (base58 of the 32-byte seed and the public key)}, chains: {base: evm, solana:
  solana, ethereum: evm, tempo: evm}}`; the sandbox forgets the private keys once shown. One
  account per address. Every login issues a fresh `sk_live_` key and earlier keys stay valid
  (the sandbox neither revokes nor rotates keys); `state.api_key`, `state.api_token` and
  `state.username` belong to a built-in account (`agent_sandbox`) and stay valid too.
- `POST /api/connect/complete` takes `{email, username, otp}` (username: 3 to 32 of `a-z`, `0-9`,
  `-`, `_`) and answers `{username, apiToken, apiBase, fundingUrl, wallets: {base, solana,
  ethereum, tempo}, agentId}`; the wallet addresses are the account's (one EVM address for
  Base, Ethereum and Tempo). A username of another account is 409 `USERNAME_TAKEN`, checked
  before the code is spent. The token opens the wallet proxy for that username only; every
  wallet draws on the one sandbox balance.
- OAuth 2.0 (SPEC.md shows no endpoint): `POST /oauth/token`, form-encoded, `grant_type=
  client_credentials`, the API key as client secret (HTTP Basic with any client id, or
  `client_secret`), `scope` `mcp:tools` (default) and/or `account:read`; answers
  `{access_token, token_type: "Bearer", scope, expires_in: 3600}` with `Cache-Control:
  no-store`, or RFC 6749 errors `{error, error_description}` (401 `invalid_client`, 400
  `invalid_request`, `unsupported_grant_type`, `invalid_scope`). Metadata at
  `/.well-known/oauth-authorization-server` and `/.well-known/oauth-protected-resource[/api/mcp]`.
- `GET /api/agent/wallets`, `/usage`, `/policies` take an API key or an `account:read` token.
  Wallets: `{agentId, usernames, wallets: [{chain, network, address, asset}], balanceUsdc,
  pooled: true}` (one balance backs every chain; it is not a sum). Usage, oldest first, every
  charge of the sandbox wallet: `{charges: [{id, createdAt, kind (market_call, dataset,
  breed_agent, merge_models), resourceId, provider, domainType, amountUsdc, chain, network,
  protocol, idempotencyKey, receipt (the transaction)}], total, totalSpentUsdc, nextCursor,
  balanceUsdc}`; parameters `since` (Unix seconds or ISO 8601, no zone meaning UTC), `cursor` (a
  `nextCursor`), `limit` (1 to 200, default 50). Policies: the fenced `policy` blocks of the
  SKILLS.md the sandbox holds (`skills.DEFAULT_SKILLS_MD`, replaced by setting
  `state.accounts.skills_md`), YAML read with pyyaml: `{source: "SKILLS.md", sha256, valid,
  policy (the blocks merged: mappings key by key, lists added up, later scalars win), blocks:
  [{line (of the opening fence), rules}], errors: [{line, message}], sandbox}`; a broken block
  gives `valid: false` and `policy: null`, never half a policy.

MCP (`sandbox.mcp`, `sandbox.tools`, `sandbox.compute`; the rules in full in `sandbox.mcp`):

- `POST /api/mcp`, JSON-RPC 2.0 answered as plain JSON (Streamable HTTP without streams, no
  session id; `GET`/`DELETE` 405). Requires `Content-Type: application/json`; refuses an `Accept`
  without JSON (406), an unknown `MCP-Protocol-Version` (400) and a foreign `Origin` (403).
  Batches of at most 50; notifications and client responses get no answer; a body with nothing
  to answer is 202. Errors: -32700 and -32600 (`id: null`) for a body that cannot be read, HTTP
  400; -32601, -32602 (message and `data.errors` name each argument), -32603 with the request's
  id, HTTP 200. A `tools/call` sent as a notification does not run.
- `initialize` answers the client's protocol version when it is one of 2025-11-25, 2025-06-18,
  2025-03-26, 2024-11-05, else 2025-11-25; capabilities `{tools: {listChanged: false}}`.
  `initialize`, `ping`, `tools/list` and the two auth tools need no credential. Any other tool in
  a body without an `sk_live_` key or an `mcp:tools` token makes the whole body 401 (nothing in
  it runs) with a JSON-RPC error -32001 and `WWW-Authenticate: Bearer ... scope="mcp:tools"`
  (`error="invalid_token"` or `"insufficient_scope"` when a credential was sent).
- Tool results carry the same JSON as a text block and as `structuredContent` (which always has
  `sandbox: true`). Failures an agent acts on are results with `isError: true` and
  `{error: {code, message, ...}, paymentRequired?}`: `PAYMENT_REQUIRED`, `PAYMENT_INVALID`
  (`reason`), `WALLET_UNFUNDED` (`fundingUrl`, `balanceUsdc`, `requiredUsdc`), `NOT_FOUND`, the
  `OTP_*` codes and `TOO_MANY_CODES`.
- Answers: `svc_auth_start` `{sent, email, expiresInSeconds, delivery, next}`;
  `svc_auth_complete` as verify-otp; `list_datasets`/`search_datasets` `{datasets, total,
  limit}`; `list_market_apis` `{apis (endpoint records), total, limit}`; `try_dataset` the trial;
  `get_dataset` `{datasetId, tier, chargedUsdc, content, payment?}` (challenge resource
  `<base_url>/api/datasets/{id}/access`, the one the REST access route uses, so one payment
  serves either; a `payment_proof` re-delivers and charges 0).
- `svc_breed_agent`: `target_task` (default `text-classification`; lower-case words and dashes),
  `base_model`, `payment_signature` (nothing else: a 10 USDC challenge for
  `<base_url>/api/mcp/tools/svc_breed_agent`). `merge_models`: `config_yaml`, validated before
  any payment (-32602 naming `config_yaml` and the problem), and `payment_signature` (15 USDC,
  `.../tools/merge_models`). Merge configuration: a YAML mapping with `merge_method` (linear,
  slerp, ties, dare_ties, dare_linear, task_arithmetic, della, model_stock, passthrough),
  `models` (1 to 16 `{model: org/name, parameters?: {name: number | true/false | [numbers]}}`),
  `base_model` (needed by all but linear and passthrough), `parameters?`, `dtype?` (float16,
  bfloat16 default, float32); slerp merges exactly 2 models, linear at least 2; nothing else.
- Compute answers `{jobId, status, chargedUsdc, payment, statusUrl, job}`. Job record: `{id,
  jobId, tool, kind (fine_tune, model_merge), status, progress, createdAt, updatedAt, startedAt,
  finishedAt, params, chargedUsdc, payment, result}`; states `queued` -> `running` ->
  `succeeded` (no failures), one step per `GET /api/jobs/{id}` (key or `mcp:tools` token; another
  agent's job is 404) or every 5 seconds; `result` names a made-up model and artifact address.

Nothing is imported here, so importing the package stays cheap; use `sandbox.server`,
`sandbox.state`, `sandbox.app` and `sandbox.catalog` directly.
"""
