"""The wallet screen: balances and funding the agent wallets."""
