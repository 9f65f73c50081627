"""How `specialists clean` (older name: `gc`) prints for people (the command is generated
from the clean op, supervise/clean.py).

    specialists clean [--days N | --all] [--keep N] [--dry-run]
"""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _cleaned(data: dict[str, Any], args: Namespace) -> int:
    freed = _size(data["freed_bytes"])
    if data["dry_run"]:
        for job_id in data["removed"]:
            print(f"would remove {job_id}")
        print(f"would remove {len(data['removed'])} finished job(s) ({freed}); nothing removed")
        return 0
    print(
        f"removed {len(data['removed'])} finished job(s) ({freed} freed);"
        f" {data['kept_active']} active kept"
    )
    for line in data["said"]:
        print(line)
    return 0


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


TEXT = {"clean": _cleaned, "gc": _cleaned}
