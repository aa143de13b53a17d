"""A process's CPU time from /proc, for the bench scripts that report CPU per request or
wait for a node to go idle."""

from typing import Optional


def cpu_ticks(pid: int) -> Optional[int]:
    """User plus system time of `pid` in clock ticks; None once it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None
