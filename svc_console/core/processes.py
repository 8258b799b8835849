"""Processes as the kernel reports them (Linux `/proc`): a process's parent, start time, name and
uid, and the chain of its ancestors.

A pid alone can be reused once its process ends, so a process is named by (pid, start time): the
start time, in clock ticks since boot, is fixed for the process's life. Where `/proc` is missing,
nothing is known and every answer is None or empty: callers decide what an unknown means.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
MAX_DEPTH = 256  # a chain longer than this is a loop in a half-read /proc, not a real tree


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    start: int
    name: str
    uid: int | None

    def same_as(self, pid: int, start: int | None) -> bool:
        return self.pid == pid and (start is None or self.start == start)


def process(pid: int) -> Process | None:
    """The process `pid` as `/proc/<pid>/stat` describes it, or None when it is gone or unknown."""
    if pid <= 0:
        return None
    try:
        # The file's owner is its process's, as the folder's: one open, read on every submit.
        with open(f"{PROC}/{pid}/stat") as file:
            stat, uid = file.read(), os.fstat(file.fileno()).st_uid
    except (OSError, ValueError):
        return None
    # The name sits in parentheses and may itself hold spaces and ')': split at the last one.
    head, _, tail = stat.rpartition(")")
    name = head.partition("(")[2]
    fields = tail.split()
    try:
        return Process(pid=pid, ppid=int(fields[1]), start=int(fields[19]), name=name, uid=uid)
    except (IndexError, ValueError):
        return None


def lineage(pid: int) -> list[Process]:
    """`pid` and its ancestors, nearest first, up to the first the kernel no longer knows."""
    chain: list[Process] = []
    current = process(pid)
    while current is not None and len(chain) < MAX_DEPTH:
        chain.append(current)
        if current.ppid <= 0 or current.ppid == current.pid:
            break
        current = process(current.ppid)
    return chain


def descends_from(pid: int, ancestor_pid: int, ancestor_start: int | None) -> bool:
    """Whether process `pid` is the process (ancestor_pid, ancestor_start) or runs under it."""
    return any(p.same_as(ancestor_pid, ancestor_start) for p in lineage(pid))
