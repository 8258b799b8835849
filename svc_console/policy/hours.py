"""Time windows as a policy author writes them: `"mon-fri 08:00-19:00"`, `"daily 07:00-22:00"`,
`"sat,sun 10:00-14:00"`, `"mon-fri 22:00-06:00"` (past midnight: the days are those it starts on).

Strings rather than YAML times on purpose: YAML 1.1 reads `8:00` as the number 480.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(
    r"^\s*(?P<days>[a-z,\-]+)\s+(?P<start>\d{1,2}:\d{2})\s*-\s*(?P<end>\d{1,2}:\d{2})\s*$"
)
FORMAT_HINT = 'a time window such as "mon-fri 08:00-19:00" or "daily 07:00-22:00"'


@dataclass(frozen=True)
class Window:
    days: frozenset[int]  # 0 = Monday
    start: int  # minutes after midnight
    end: int  # minutes after midnight; at most start means the window runs past midnight

    def contains(self, weekday: int, minute: int) -> bool:
        if self.start < self.end:
            return weekday in self.days and self.start <= minute < self.end
        # Past midnight: the evening belongs to its own day, the morning to the day before.
        if minute >= self.start:
            return weekday in self.days
        return minute < self.end and (weekday - 1) % 7 in self.days


def parse(text: str) -> Window:
    """Raises ValueError with what is wrong."""
    match = _WINDOW.match(text.lower())
    if match is None:
        raise ValueError(f"must be {FORMAT_HINT}")
    return Window(_days(match["days"]), _minute(match["start"]), _minute(match["end"]))


def _days(text: str) -> frozenset[int]:
    if text in ("daily", "every-day", "all"):
        return frozenset(range(7))
    if text in ("weekdays",):
        return frozenset(range(5))
    if text in ("weekends",):
        return frozenset({5, 6})
    days: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if first not in DAYS or (last and last not in DAYS):
            raise ValueError(
                f"must name days as mon..sun, daily, weekdays or weekends ({FORMAT_HINT})"
            )
        start, stop = DAYS.index(first), DAYS.index(last or first)
        span = (stop - start) % 7
        days.update((start + offset) % 7 for offset in range(span + 1))
    return frozenset(days)


def _minute(text: str) -> int:
    hours, minutes = (int(part) for part in text.split(":"))
    if hours > 24 or minutes > 59 or (hours == 24 and minutes):
        raise ValueError(f"has an impossible time {text} ({FORMAT_HINT})")
    return hours * 60 + minutes


def normal(text: str) -> str:
    """One spelling of a window, so two policies that mean the same compare equal:
    `mon-fri 08:00-19:00`, `daily 00:00-24:00`, `mon,wed-fri 09:00-17:00`."""
    window = parse(text)
    days = "daily" if window.days == frozenset(range(7)) else _day_runs(sorted(window.days))
    return f"{days} {_clock(window.start)}-{_clock(window.end)}"


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _day_runs(days: list[int]) -> str:
    runs: list[list[int]] = []
    for day in days:
        if runs and day == runs[-1][-1] + 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return ",".join(
        DAYS[run[0]] if len(run) == 1 else f"{DAYS[run[0]]}-{DAYS[run[-1]]}" for run in runs
    )
