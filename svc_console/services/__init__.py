"""What the CLI and the TUI both do on the operator's behalf: catalogue sync and details, usage sync
and export, onboarding. Each is plain code over the ledger and the market clients."""
