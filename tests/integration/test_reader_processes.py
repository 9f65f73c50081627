"""The tests of tests/unit/test_reader.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations


def test_the_reader_imports_nothing_slow() -> None:
    """The store and the hooks may read untrusted files through the reader on the fast
    commands' path: it must not pull in yaml, typing, pathlib or difflib at import."""
    import subprocess
    import sys

    code = "import specialists.reader, specialists.reader.textfile"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=60
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "specialists.reader.fields" in names, proc.stderr[-300:]
    assert not {"yaml", "typing", "pathlib", "difflib", "dataclasses"} & names
