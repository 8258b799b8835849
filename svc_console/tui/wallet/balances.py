"""The top of the wallet screen: whose wallet, its balance, and its address on every chain.

Addresses, networks and names come from the service: shown inert, as plain text. The service
reports one balance: when it is pooled it backs every chain at once and is never a sum per chain,
so it is said once ("on every chain"), not repeated per row where it would read as money on each.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from svc_console.core.account import AgentWallets
from svc_console.core.money import format_usdc
from svc_console.core.sanitize import inert_line
from svc_console.tui.colors import Palette

ADDRESS_LIMIT = 64


def _summary(wallets: AgentWallets, username: str | None, colours: Palette) -> Text:
    text = Text.assemble(
        ("agent ", colours.label),
        (inert_line(wallets.agent_id, 40), "bold"),
    )
    if username:
        text.append(" · wallet ", colours.label)
        text.append(inert_line(username, 40), "bold")
    text.append(" · balance ", colours.label)
    text.append(f"{format_usdc(wallets.balance_usdc)} USDC", colours.heading)
    if wallets.pooled:
        text.append(" (one balance, spent on any chain)", colours.label)
    return text


def _addresses(wallets: AgentWallets, colours: Palette) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style=colours.label)
    rows = [
        (
            inert_line(wallet.chain, 16),
            inert_line(wallet.address, ADDRESS_LIMIT),
            inert_line(wallet.asset, 8),
            inert_line(wallet.network, 60),
        )
        for wallet in wallets.wallets
    ]

    def widest(column: int, header: str) -> int:
        return max([len(header), *(len(row[column]) for row in rows)])

    # The chain, the address and the asset are never cut: the network gives way first.
    table.add_column("chain", no_wrap=True, min_width=widest(0, "chain"))
    table.add_column("address", no_wrap=True, min_width=widest(1, "address"))
    table.add_column("asset", no_wrap=True, min_width=widest(2, "asset"))
    table.add_column("network", no_wrap=True, overflow="ellipsis", ratio=1)
    for chain, address, asset, network in rows:
        table.add_row(
            Text(chain, style="bold"), Text(address), Text(asset), Text(network, colours.label)
        )
    return table


class WalletBalances(Static):
    """The agent, the wallet's username, the balance, and one row per chain."""

    DEFAULT_CSS = """
    WalletBalances { height: auto; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("Reading the wallet…", id=id, markup=False)

    def show(self, wallets: AgentWallets, username: str | None, colours: Palette) -> None:
        if not wallets.wallets:
            body: Text | Table = Text("The service lists no wallet address.", colours.warn)
        else:
            body = _addresses(wallets, colours)
        self.update(Group(_summary(wallets, username, colours), body))

    def show_error(self, message: str, colours: Palette) -> None:
        self.update(
            Text.assemble(
                ("The wallet could not be read: ", colours.high),
                message,
                ("  r tries again", colours.label),
            )
        )
