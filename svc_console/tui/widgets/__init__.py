"""Widgets of the TUI, grouped by the area of the screen they fill."""
