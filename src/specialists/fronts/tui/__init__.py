"""`specialists top`: the live terminal dashboard (Textual, the optional `tui` extra).

Only `app.py` and `screens.py` import Textual; `commands.py` (what the keys do) and
`cells.py` (how a row is drawn) are plain Python, tested without a terminal.
"""
