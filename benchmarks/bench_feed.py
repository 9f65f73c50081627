"""`specialists feed --follow`: event written -> line printed latency (target p90 <= 100 ms)."""

from __future__ import annotations

import random
import subprocess
import threading
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, median_ms, p90_ms, sp_argv
from specialists import notices
from specialists.jobs.store import JobStore
from specialists.jobs.writer import JobWriter
from tests.support.jobs import new_job

EVENTS = 60


def main() -> None:
    print(f"# feed --follow latency — {machine()}")
    layout = isolated_project()
    store = JobStore(layout.project / ".specialists", news=notices)
    record, lock = new_job(store, Path(layout.project))  # we play the live supervisor
    writer = JobWriter(store, record.id)
    st = store.read_status(record.id)
    assert st is not None
    st.status = "running"
    writer.write_status(st)
    proc = subprocess.Popen(
        sp_argv("feed", "--job", record.id, "--follow"),
        env=layout.env,
        cwd=layout.project,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    arrivals: dict[int, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "(step #" in line:
                arrivals[int(line.rsplit("#", 1)[1].strip(") \n"))] = time.perf_counter()

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(1.0)  # let feed start
    written: dict[int, float] = {}
    for i in range(EVENTS):
        time.sleep(random.uniform(0.02, 0.15))
        written[i] = time.perf_counter()
        writer.append_event("toolcall", tool="bash", args=f"(step #{i})")
    time.sleep(0.5)
    writer.append_event("done", duration_ms=1)
    proc.wait(10)
    reader.join(5)
    lock.release()
    latencies = [arrivals[i] - written[i] for i in written if i in arrivals]
    print(
        f"feed --follow: {len(latencies)}/{EVENTS} events seen; latency median "
        f"{median_ms(latencies):.0f} ms, p90 {p90_ms(latencies):.0f} ms; exited "
        f"{'after' if proc.returncode == 0 else 'WITHOUT'} the final event"
    )


if __name__ == "__main__":
    main()
