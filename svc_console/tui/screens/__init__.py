"""The TUI's screens; the approvals screen is home."""
