"""`python -m specialists`: the CLI, and the entry of every process we start ourselves (a
job's supervisor, a workflow's engine, a Ray node's relay), which boots the features first."""

import sys

ENTRIES = {
    "_supervise": "specialists.supervise.main:main",
    "_workflow": "specialists.features.workflows.engine:main",
    "_relay": "specialists.executors.relay:main",
    "_forks": "specialists.supervise.forks:main",
}


def main() -> None:
    entry = ENTRIES.get(sys.argv[1]) if len(sys.argv) > 1 else None
    if entry is None:
        from specialists.fronts.cli.main import entry as cli

        cli()
        return
    if entry == ENTRIES["_supervise"]:  # its keeper forks off before the imports and boot
        from specialists.supervise.main import main as supervise

        sys.exit(supervise(sys.argv[2:], _boot))
    import importlib

    _boot()
    module, _, name = entry.partition(":")
    sys.exit(getattr(importlib.import_module(module), name)(sys.argv[2:]))


def _boot() -> None:
    from specialists.project import boot

    boot()


main()
