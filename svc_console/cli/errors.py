"""How a command fails: one line on stderr and an exit code scripts can rely on."""

# `agent submit --wait` exit codes: scripts depend on them (DESIGN.md, Command line).
EXIT_BY_STATE = {
    "succeeded": 0,
    "denied": 3,
    "expired": 4,
    "failed": 5,
    "cancelled": 6,
    "rejected": 7,
    "unknown": 8,
}
EXIT_USAGE = 2


class CommandError(Exception):
    """A failure to report in one line."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code
