"""`specialists list` over 10 / 100 / 1,000 / 10,000 definition files, and the catalog load
alone (in-process), so a growing catalog is seen to stay linear.

Each project gets N YAML definitions plus, in the 10,000 case, 100 planted entries (FIFOs,
directories named like definitions, symlinks to /dev/zero) that must each cost one line.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, median_ms, peak_rss_of, sp_argv, timed

DEFINITION = """\
specialist:
  metadata: {{name: s{i:05d}, description: 'specialist number {i}', version: 1.0}}
  execution: {{model: anthropic/claude-sonnet-4-5, permission_required: READ_ONLY}}
  prompt:
    system: |
      You are specialist number {i}. Answer briefly.
    task_template: "$prompt"
"""


def fill(folder: Path, count: int, *, planted: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"s{i:05d}.specialist.yaml").write_text(DEFINITION.format(i=i))
    for i in range(planted):
        kind = i % 3
        path = folder / f"planted{i:03d}.specialist.yaml"
        if kind == 0:
            os.mkfifo(path)
        elif kind == 1:
            path.mkdir()
        else:
            path.symlink_to("/dev/zero")


def in_process_load_s(root: Path, runs: int) -> float:
    from specialists.catalog import load_catalog

    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        load_catalog(root)
        samples.append(time.perf_counter() - t0)
    return median_ms(samples) / 1000


def main() -> None:
    print(f"# specialists list — {machine()}")
    for count, runs in ((10, 15), (100, 9), (1000, 5), (10000, 3)):
        layout = isolated_project()
        planted = 100 if count == 10000 else 0
        fill(layout.project / "specialists", count, planted=planted)
        argv = sp_argv("list")
        timed(argv, env=layout.env, cwd=layout.project)  # warm the page cache and bytecode
        walls = []
        for _ in range(runs):
            wall, _, proc = timed(argv, env=layout.env, cwd=layout.project)
            assert proc.returncode == 0, proc.stderr[-500:]
            assert proc.stderr.count("not a regular file") == planted, proc.stderr[-500:]
            walls.append(wall)
        rss = peak_rss_of(argv, env=layout.env, cwd=layout.project)
        os.environ.update(layout.env)  # the in-process load reads the same scopes
        load_ms = in_process_load_s(layout.project, runs) * 1000
        per_file_us = load_ms * 1000 / (count + 8)  # 8 builtins
        extra = f" (+{planted} planted entries, one line each)" if planted else ""
        print(
            f"list, {count:>6} definitions{extra}: median {median_ms(walls):8.1f} ms,"
            f" peak RSS {rss:6.1f} MB; catalog load {load_ms:8.1f} ms ({per_file_us:5.0f} µs/file)"
        )


if __name__ == "__main__":
    main()
