"""`specialists scheduler`: fire due schedules until stopped (SIGTERM or Ctrl-C).

Optional: `schedule run-due` from cron or a systemd timer does the same job one pass at a
time. Both may run at once, and either may be killed at any moment: every slot is leased
before it fires, so none fires twice (docs/schedules.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.features.schedules.fire import RunDueReport
    from specialists.project import Project


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scheduler", help="fire due schedules until stopped")
    p.add_argument(
        "--max-wait", type=float, default=30.0, help="seconds between looks for new schedules"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    import os
    import signal
    import time

    from specialists.base.display import display_line
    from specialists.base.errors import UserError
    from specialists.features.schedules.loop import serve
    from specialists.features.schedules.store import ScheduleStore
    from specialists.store.files import ensure_dir

    if not 0.05 <= args.max_wait <= 3600:
        raise UserError(f"--max-wait {args.max_wait:g} is out of range", hint="0.05 to 3600")
    stopping: list[int] = []

    def stop_on(signum: int, _frame: object) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop_on)
    signal.signal(signal.SIGINT, stop_on)
    ensure_dir(project.store.root)
    store = ScheduleStore(project.store.root)
    warnings: list[str] = []

    def report(result: RunDueReport) -> None:
        for warning in warnings:
            print(f"warning: {display_line(warning, 400)}", file=sys.stderr)
        warnings.clear()
        for problem in result.problems:
            print(f"warning: {display_line(problem, 400)}", file=sys.stderr)
        for f in result.firings:
            job = f" job {f.job_id}" if f.job_id else ""
            detail = f" ({f.detail})" if f.detail else ""
            slot = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(f.slot_ms / 1000))
            print(display_line(f"{f.schedule_id} {slot} {f.outcome}{job}{detail}", 400))
        sys.stdout.flush()

    print(f"scheduler: watching {store.root} (pid {os.getpid()})", flush=True)
    serve(
        store,
        project.store,
        stop=lambda: bool(stopping),
        on_report=report,
        max_wait_s=args.max_wait,
        warnings=warnings,
    )
    print("scheduler: stopped", flush=True)
    return 0
