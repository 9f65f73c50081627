"""Managing specialist definitions from the CLI (issue 12 item 5; seed 004 "Management Mode").

    agents.py    create, update, delete, eject, disable, enable, reset: outcomes, not prints
    settings.py  the scope's agents.json: disabled names and the files we wrote (by hash)

The catalog reads what this room writes (catalog/managed.py); this room sits above the
catalog and the job store's atomic writer. See docs/specialists.md "Managing definitions".
"""
