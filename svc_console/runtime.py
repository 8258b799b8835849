"""The composition root: builds the ledger, the marketplace clients (or the embedded sandbox), the
broker and its socket from the settings, and tears them down in order.

`svc-console serve`, the TUI and the tests all start the console through `Runtime`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svc_console.broker.config import BrokerConfig
from svc_console.config.errors import SettingsError
from svc_console.core import collector
from svc_console.core.private_files import ensure_private_dir
from svc_console.core.sanitize import inert_line
from svc_console.core.tasks import cancel_and_wait

# The broker, the ledger and the marketplace clients are imported when the runtime starts, not
# with this module: the command line builds a Runtime before the TUI paints its first frame.
if TYPE_CHECKING:
    from svc_console.broker import Broker
    from svc_console.broker.agent_access import AgentAccess
    from svc_console.broker.socket_server import ApprovalSocket
    from svc_console.config.agents import AgentSettings
    from svc_console.config.notify_settings import NotifySettings
    from svc_console.config.paths import Paths
    from svc_console.config.service import ServiceConfig
    from svc_console.config.slack_settings import SlackSettings
    from svc_console.ledger import Ledger
    from svc_console.ledger.usage_write import SyncResult
    from svc_console.market.account import AccountClient
    from svc_console.market.gateway import Marketplace
    from svc_console.market.mcp import McpClient
    from svc_console.market.signer import Signer
    from svc_console.services.catalogue_sync import Progress, SyncReport
    from svc_console.services.metrics_http import MetricsServer
    from svc_console.services.notify import Notifier
    from svc_console.services.slack_app import SlackApprovals
    from svc_console.services.usage_follow import UsageFollower

log = logging.getLogger(__name__)


def unsettled_notice(request: Any) -> str:
    """One line for a request recovery turned `unknown`: which call, its approved ceiling, and how
    to find out whether it was charged. Agent-supplied text is made inert here."""
    from svc_console.core.money import format_usdc

    decision = request.decision
    ceiling = decision.ceiling_usdc if decision is not None else None
    amount = "no ceiling" if ceiling is None else f"approved ceiling {format_usdc(ceiling)} USDC"
    endpoint = request.endpoint_id or request.dataset_id or request.kind
    return (
        f"request {inert_line(request.id, 40)} ({inert_line(endpoint, 80)}, {amount}) was in"
        " flight when the console stopped and is now unknown: it may have been charged."
        " Reconcile it against the usage history (the Usage screen, or svc-console usage"
        " export) before retrying."
    )


@dataclass
class Runtime:
    paths: Paths
    service: ServiceConfig | None = None
    config: BrokerConfig = field(default_factory=BrokerConfig)
    broker_options: dict[str, Any] = field(default_factory=dict)
    # The embedded sandbox, when no service is configured: a SandboxChild (a process of its own)
    # the runtime starts, or a server the caller started and passes in (the tests' own).
    sandbox: Any = None
    # The key the signer pays with (else the saved account wallet's; the sandbox's, a throwaway):
    # handed to the signer at the start and not kept here (market/signer.py).
    payer_key: str | None = field(default=None, repr=False)
    ledger: Ledger | None = None
    # Where the ledger's rows live when not the local file: a PostgreSQL URL. None: the one
    # settings name for the real ledger (`config.ledger_url`), the file for the sandbox's.
    ledger_url: str | None = None
    market: Marketplace | None = None
    broker: Broker | None = None
    socket: ApprovalSocket | None = None  # the agents'
    operator_socket: ApprovalSocket | None = None
    # Who may speak the agents' socket (settings.toml [agents] when None) and, once started, the
    # rules in force; `agent_warning` says when agents of the operator's own user are accepted.
    agent_settings: AgentSettings | None = None
    access: AgentAccess | None = None
    passphrase: Any = None  # the operator passphrase decisions over the operator socket need
    operators: Any = None  # the operator accounts (pinned at start) that replace it, when any
    console_operator: str | None = None  # the TUI's operator: settings.toml [operator] name
    # The SKILLS.md files in force (settings.policy_files); None: $SVC_CONSOLE_HOME/SKILLS.md,
    # optional. `policy` is the LivePolicy the broker asks (its `status` feeds the banner).
    policy_files: list[Path] | None = None
    policy_optional: bool = False
    policy: Any = None
    # The requests recovery turned `unknown` at start-up (in flight when the last process died),
    # for `serve` and the TUI to put in front of the operator, not only in the log.
    unsettled: list[Any] = field(default_factory=list)
    # settings.toml [notify] when None (a table that cannot be read: no notices; the CLI refuses
    # it first); `notify_options` go to the Notifier (tests shorten its pauses).
    notify: NotifySettings | None = None
    notify_options: dict[str, Any] = field(default_factory=dict)
    notifier: Notifier | None = None
    # settings.toml [slack] when None (approvals from Slack; none without the table);
    # `slack_options` go to SlackApprovals (tests shorten its pauses).
    slack_settings: SlackSettings | None = None
    slack_options: dict[str, Any] = field(default_factory=dict)
    slack: SlackApprovals | None = None
    # `serve --metrics HOST:PORT`: Prometheus metrics there (off when None).
    metrics_at: tuple[str, int] | None = None
    metrics: MetricsServer | None = None
    usage: UsageFollower | None = None  # the background usage sync
    # What the usage sync's first run waits for, when set: the TUI's screens opening (that run
    # makes an HTTP client, which held the first full screen back by a fifth of a second).
    usage_first_after: asyncio.Event | None = None
    _policy_watch: asyncio.Task[None] | None = None
    _owns_sandbox: bool = False
    _sandbox_address: tuple[str, str] | None = None
    _sandbox_watch: asyncio.Task[None] | None = None

    def launch_sandbox(self) -> None:
        """Start the embedded sandbox's process now, when this runtime will need one, so that it
        starts in parallel with whatever comes before `start()` (the TUI's first frame)."""
        if self.service is not None or self.sandbox is not None:
            return
        from svc_console.sandbox.child import SandboxChild

        ensure_private_dir(self.paths.home)
        self.sandbox = SandboxChild(self.paths.sandbox)
        self._owns_sandbox = True
        self.sandbox.start()

    async def start(self) -> Broker:
        from svc_console.broker import Broker
        from svc_console.ledger import Ledger

        if self.notify is None:
            self.notify = self._read_notify_settings()
        ensure_private_dir(self.paths.home)
        self.ledger = Ledger(self.ledger_path, url=self.resolved_ledger_url())
        try:
            self.market = self._connect()
            self._hold_secrets(self.market)
            options = dict(self.broker_options)
            if "policy" not in options:  # tests may bring their own engine
                options["policy"] = self._start_policy(self.clock)
            self.broker = Broker(self.ledger, self.market, config=self.config, **options)
            self.broker.decisions.console_operator = self.console_operator
            self.unsettled = await self.broker.start()
            for request in self.unsettled:
                log.warning("request %s was in flight at the last stop: now unknown", request.id)
            await self._start_notices()
            self._follow_usage()
            await self._start_metrics()
            await self._open_sockets()
            await self._start_slack()
        except BaseException:
            await self.stop()
            raise
        log.info("broker started; socket %s; service %s", self.paths.socket, self.market.base_url)
        # Start-up's lifelong objects kept out of full collections under load.
        collector.started()
        return self.broker

    def _hold_secrets(self, market: Marketplace) -> None:
        """Every secret the console holds, beside the service's credentials the market has: what
        no agent's submission may carry, in any spelling (its search is built here, once)."""
        from svc_console.broker.secret_refusal import own_secrets
        from svc_console.config.held_secrets import held_secrets

        market.secrets = (*market.secrets, *held_secrets(self.paths, sandbox=self.service is None))
        own_secrets(market.secrets, market.signer.key_forms)

    async def _start_notices(self) -> None:
        """The webhooks of `[notify]`, when there are any, following the broker and the policy."""
        assert self.broker is not None and self.notify is not None
        if not self.notify.webhooks:
            return
        from svc_console.services.notify import Notifier

        self.notifier = Notifier(self.notify, clock=self.broker.clock, **self.notify_options)
        await self.notifier.start(self.broker, self.policy)

    async def _start_metrics(self) -> None:
        """Prometheus metrics at `metrics_at`, counted from here on (services/metrics*.py)."""
        if self.metrics_at is None:
            return
        from svc_console.services.metrics_http import MetricsServer

        self.metrics = MetricsServer(self)
        await self.metrics.start(*self.metrics_at)

    async def _start_slack(self) -> None:
        """Approvals from Slack, when settings.toml has `[slack]` (services/slack_app.py); after
        the sockets, whose start pins the operator accounts Slack users are linked to."""
        if self.slack_settings is None:
            self.slack_settings = self._read_slack_settings()
        if self.slack_settings is None:
            return
        from svc_console.services.slack_app import SlackApprovals

        self.slack = SlackApprovals(
            self.slack_settings,
            self.operators,
            messages_file=self.ledger_path.with_suffix(".slack.json"),
            **self.slack_options,
        )
        await self.slack.start(self.broker)

    def _follow_usage(self) -> None:
        """Keep the usage history synced in the background (services/usage_follow.py)."""
        assert self.broker is not None
        from svc_console.services.usage_follow import UsageFollower

        # The embedded sandbox's charges end with its process: synced once more at the stop.
        last = self.service is None and self._owns_sandbox
        self.usage = UsageFollower(self.sync_usage, self.broker.clock, sync_at_stop=last)
        self.usage.start(self.broker, first_after=self.usage_first_after)

    async def _open_sockets(self) -> None:
        from svc_console.broker.agent_access import AgentAccess
        from svc_console.broker.limits import raise_open_files, within_open_files
        from svc_console.broker.methods import Role
        from svc_console.broker.socket_server import ApprovalSocket
        from svc_console.config.agent_registry import AgentRegistry
        from svc_console.config.operator_accounts import OperatorAccounts

        assert self.broker is not None and self.market is not None
        settings = self.agent_settings or self._read_agent_settings()
        if self.passphrase is None:
            from svc_console.config.operator_passphrase import OperatorPassphrase

            self.passphrase = OperatorPassphrase(self.paths.operator_passphrase).pin()
        accounts = OperatorAccounts(self.paths.operator_accounts)
        if self.operators is None:
            self.operators = accounts.pin()
        # Under the two-person rule, a first approval by an operator removed since counts no more,
        # and two accounts one of whose approvers created the other count as one person.
        self.broker.decisions.removed_operator = accounts.removed
        creators = getattr(self.operators, "creators", None)
        if creators is not None:
            self.broker.decisions.creators = creators
        registry = AgentRegistry(self.paths.agent_registry)
        # Under the two-person rule, the operator who registered the asking agent may not approve.
        self.broker.decisions.registrant = registry.registrant
        self.access = AgentAccess(settings, registry, sandbox=self.market.sandbox)
        # What revoked agents left undecided while the console was stopped.
        await self.broker.cancel_agents(registry.revoked())
        agents_limits, operator_limits = within_open_files(raise_open_files())
        self.operator_socket = ApprovalSocket(
            self.broker,
            self.paths.operator_socket,
            role=Role.operator,
            access=self.access,
            passphrase=self.passphrase,
            operators=self.operators,
            home=self.paths.home,
            limits=operator_limits,
            operator_uids=self._read_operator_uids(),
        )
        await self.operator_socket.start()
        self.socket = ApprovalSocket(
            self.broker,
            self.paths.socket,
            role=Role.agents,
            access=self.access,
            home=self.paths.home,
            limits=agents_limits,
        )
        await self.socket.start()

    def _read_agent_settings(self) -> AgentSettings:
        """settings.toml's `[agents]`; when the file cannot be read, the narrowest rules (the
        socket owner-only, enrolment by service), never wider ones. The CLI refuses such a file
        before it gets here; the TUI reports it."""
        from svc_console.config.agents import AgentSettings, agent_settings

        try:
            return agent_settings(self.paths.settings)
        except SettingsError as exc:
            log.warning("agents' settings not applied: %s", exc)
            return AgentSettings()

    def _read_operator_uids(self) -> frozenset[int]:
        """settings.toml's `[operator] uids`; when it cannot be read, none (the operator socket
        owner-only), never more."""
        from svc_console.config.operator_settings import operator_uids

        try:
            return operator_uids(self.paths.settings)
        except SettingsError as exc:
            log.warning("operator socket kept to its owner: %s", exc)
            return frozenset()

    def _read_notify_settings(self) -> NotifySettings:
        """settings.toml's `[notify]`; when it cannot be read, no notice at all (the CLI refuses
        such a file before it gets here; the TUI started alone reports the file)."""
        from svc_console.config.notify_settings import NotifySettings, notify_settings

        try:
            return notify_settings(self.paths.settings)
        except SettingsError as exc:
            log.warning("notices not sent: %s", exc)
            return NotifySettings()

    def _read_slack_settings(self) -> SlackSettings | None:
        """settings.toml's `[slack]`; when it cannot be read, no Slack (the CLI refuses such a
        file before it gets here)."""
        from svc_console.config.slack_settings import slack_settings

        try:
            return slack_settings(self.paths.settings)
        except SettingsError as exc:
            log.warning("approvals from Slack not started: %s", exc)
            return None

    @property
    def clock(self) -> Callable[[], float]:
        """The broker's clock (tests bring their own), readable before the broker exists."""
        return self.broker_options.get("clock", time.time)

    @property
    def ledger_path(self) -> Path:
        """Sandbox play never mixes with real spend: a sandbox runtime has a ledger of its own."""
        return self.paths.ledger(sandbox=self.service is None)

    def resolved_ledger_url(self) -> str | None:
        """The PostgreSQL URL of a team's ledger (SVC_LEDGER_URL, settings.toml [ledger]), or
        None for the file: the real ledger only, never sandbox play. Readable before the start
        (the first frame reads the queue through it); raises SettingsError as the start does."""
        if self.ledger_url is not None or self.service is None:
            return self.ledger_url
        from svc_console.config.ledger_url import ledger_url

        return ledger_url(self.paths)

    @property
    def agent_warning(self) -> str | None:
        """Said wherever agents running as the operator's own user are accepted."""
        return self.access.same_user_warning() if self.access is not None else None

    def _start_policy(self, clock: Any) -> Any:
        from svc_console.broker import policy_link

        files, optional = self.policy_files, self.policy_optional
        if files is None:
            files, optional = [self.paths.home / "SKILLS.md"], True
        assert self.ledger is not None
        self.policy = policy_link.live_policy(self.ledger, files, optional=optional, clock=clock)
        self._policy_watch = policy_link.watch(self.policy)
        return self.policy

    def _connect(self) -> Marketplace:
        from svc_console.market.gateway import Marketplace

        if self.service is not None:
            s = self.service
            return Marketplace.connect(
                base_url=s.base_url,
                wallet_api_base=s.wallet_api_base,
                api_key=s.api_key,
                username=s.username,
                api_token=s.api_token,
                sandbox=False,
                signer=self._signer(),
            )
        self.launch_sandbox()
        base_url = self.sandbox.base_url
        if self._owns_sandbox:
            # Nothing waits for the child: a request sent before it serves waits in its socket's
            # queue. Only a child that never serves is worth a word, in the log.
            self._sandbox_watch = asyncio.create_task(self._watch_sandbox(), name="sandbox-ready")
        state = self.sandbox.state
        self._sandbox_address = base_url, state.api_key
        return Marketplace.connect(
            base_url=base_url,
            wallet_api_base=base_url,
            api_key=state.api_key,
            username=state.username,
            api_token=state.api_token,
            sandbox=True,
            signer=self._signer(),
        )

    async def _watch_sandbox(self) -> None:
        try:
            await self.sandbox.ready()
        except RuntimeError as exc:
            log.error("%s", exc)

    def service_address(self) -> tuple[str, str]:
        """The base URL and API key of the service this runtime speaks to: the configured one, or
        the embedded sandbox when none is."""
        if self.service is not None:
            return self.service.base_url, self.service.api_key
        if self._sandbox_address is not None:
            # Where the clients pointed at the start: a sandbox stopped since is then unreachable.
            return self._sandbox_address
        if self.sandbox is None:
            raise RuntimeError("the console is not started")
        return self.sandbox.base_url, self.sandbox.state.api_key

    def account_client(self) -> AccountClient:
        """A client of the service's account routes (usage history, funding, wallets)."""
        from svc_console.market.account import AccountClient

        base_url, api_key = self.service_address()
        return AccountClient(base_url, api_key=api_key)

    def mcp_client(self) -> McpClient:
        """A client of the service's MCP endpoint, with its API key."""
        from svc_console.market.mcp import MCP_PATH, McpClient

        base_url, api_key = self.service_address()
        return McpClient(f"{base_url.rstrip('/')}{MCP_PATH}", credential=api_key, timeout_s=30.0)

    async def sync_usage(self) -> SyncResult:
        """Bring the ledger's usage history up to date from the service."""
        from svc_console.services.usage_sync import sync_from

        if self.ledger is None:
            raise RuntimeError("the console is not started")
        base_url, _ = self.service_address()
        async with self.account_client() as account:
            return await sync_from(account, self.ledger, base_url)

    async def sync_catalogue(self, progress: Progress | None = None) -> SyncReport:
        """Refill the ledger's catalogue cache from the service, on a loop and a client of its
        own: its requests never wait behind the broker's, nor the broker's and the TUI's behind
        them. `progress` is called from that loop's thread."""
        from svc_console.core.apart import on_a_loop_of_its_own
        from svc_console.market.rest import MarketClient
        from svc_console.services.catalogue_sync import sync_catalogue

        if self.market is None or self.ledger is None:
            raise RuntimeError("the console is not started")
        base_url, api_key = self.service_address()
        ledger, now = self.ledger.path, self.clock()

        async def sync() -> SyncReport:
            rest = MarketClient(base_url, api_key)
            try:
                return await sync_catalogue(rest, ledger, now=now, progress=progress)
            finally:
                await rest.aclose()

        return await on_a_loop_of_its_own(sync, "catalogue-sync")

    def _signer(self) -> Signer:
        """The one signer, holding the wallet key from now on: the key given (and dropped here),
        the saved account wallet's, or for sandbox play a throwaway one (any valid signer is a
        payer there)."""
        from svc_console.market.signer import Signer

        key, self.payer_key = self.payer_key, None
        if key:
            return Signer.with_key(key, self.clock)
        if self.service is None:
            return Signer.throwaway(self.clock)
        return Signer.account_wallet(self.paths, self.clock)

    async def stop(self, *, leaving: bool = False) -> None:
        """Stop everything started; `leaving`: the process exits next, so the embedded sandbox is
        told to stop and not waited for."""
        gc.unfreeze()  # what this start froze may now be garbage (a test's, the TUI's restart)
        for service in (self.metrics, self.slack, self.notifier, self.usage):
            if service is not None:
                await service.stop()
        self.metrics = self.slack = self.notifier = self.usage = None
        await cancel_and_wait([self._policy_watch, self._sandbox_watch])
        self._policy_watch = self._sandbox_watch = None
        for socket in (self.socket, self.operator_socket):
            if socket is not None:
                await socket.stop()
        self.socket = self.operator_socket = None
        if self.broker is not None:
            self.broker.decisions.refusals.flush(everything=True)  # the bursts' counts
            await self.broker.stop()
            self.broker = None
        if self.market is not None:
            await self.market.aclose()
            self.market = None
        if self.sandbox is not None and self._owns_sandbox:
            self.sandbox.stop(wait=not leaving)
        if self.ledger is not None:
            self.ledger.close()
            self.ledger = None

    async def __aenter__(self) -> Runtime:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
