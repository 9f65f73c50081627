"""`specialists install --pi` / `uninstall --pi`: our extension in pi's settings.json.

pi 1.x loads every path listed under `extensions` in `.pi/settings.json` (project; only once
the project is trusted, see cli/cmd_install.py's note) and `$PI_CODING_AGENT_DIR/settings.json`
(user; default ~/.pi/agent/settings.json). We add the absolute path of the installed
`pi_extension/index.ts`, and under our own key the interpreter that starts its sidecar
(`"specialists": {"sidecar": [<python>, "-m", "specialists"]}`, read by core.mjs
`sidecarCommand`), so pi started from a shell without our virtualenv on PATH still finds us.
An entry ending in `specialists/pi_extension/index.ts` is ours (an older install at another
path is replaced); uninstall removes exactly those entries and our `sidecar`, then a container
we emptied, then the file if nothing else is left. A file that is not a JSON object is
refused, untouched.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from specialists.fronts.install import load_json_object, shaped, this_python, write_json_object
from specialists.runners.pi_extension import EXTENSION_FILE

# Where the extension lives now, and where releases before 0.2 kept it (replaced on install).
OURS_SUFFIXES = ("/specialists/runners/pi_extension/index.ts", "/specialists/pi_extension/index.ts")
KEY = "specialists"  # our own settings in pi's file, as pi-subagents keeps `subagents`

Doc = dict[str, Any]


def project_settings(root: Path) -> Path:
    return root / ".pi" / "settings.json"


def user_settings() -> Path:
    agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
    base = Path(agent_dir).expanduser() if agent_dir else Path.home() / ".pi" / "agent"
    return base / "settings.json"


def is_ours(entry: object) -> bool:
    return isinstance(entry, str) and entry.replace("\\", "/").endswith(OURS_SUFFIXES)


def _extensions(doc: Doc, where: str) -> list[Any] | None:
    return shaped(doc.get("extensions"), list, "extensions", where)


def _ours(doc: Doc, where: str) -> dict[str, Any] | None:
    return shaped(doc.get(KEY), dict, KEY, where)


def sidecar_argv(python: str) -> list[str]:
    return [python, "-m", "specialists"]


def merge(
    doc: Doc, where: str, path: str = str(EXTENSION_FILE), python: str | None = None
) -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    entries = _extensions(out, where)
    ours = _ours(out, where)
    sidecar = sidecar_argv(python or this_python())
    notes = []
    if entries is None:
        entries = out["extensions"] = []
    if path in entries:
        notes.append(f"pi extension already in {where}")
    else:
        stale = [e for e in entries if is_ours(e)]
        out["extensions"] = [e for e in entries if not is_ours(e)] + [path]
        said = "replaced an older specialists entry" if stale else "added the specialists extension"
        notes.append(f"{said} in {where}: {path}")
    if (ours or {}).get("sidecar") != sidecar:
        out[KEY] = {**(ours or {}), "sidecar": sidecar}
        notes.append(f"the extension starts its sidecar with {sidecar[0]} ({where}: {KEY}.sidecar)")
    return out, notes


def unmerge(doc: Doc, where: str) -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    entries = _extensions(out, where)
    ours = _ours(out, where)
    if ours is not None and "sidecar" in ours:
        del ours["sidecar"]
        if not ours:
            del out[KEY]
    if not entries or not any(is_ours(e) for e in entries):
        return out, [f"no specialists extension in {where}"]
    kept = [e for e in entries if not is_ours(e)]
    if kept:
        out["extensions"] = kept
    else:
        del out["extensions"]
    return out, [f"removed the specialists extension from {where}"]


def install_pi(settings_file: Path, *, show: str, dry_run: bool = False) -> list[str]:
    doc = load_json_object(settings_file)
    new, notes = merge(doc or {}, show)
    if new != doc and not dry_run:
        write_json_object(settings_file, new)
    return [f"(dry run) {n}" for n in notes] if dry_run else notes


def uninstall_pi(settings_file: Path, *, show: str, dry_run: bool = False) -> list[str]:
    doc = load_json_object(settings_file)
    if doc is None:
        return [f"no {show}"]
    new, notes = unmerge(doc, show)
    if new != doc and not dry_run:
        if new or settings_file.is_symlink():  # a link is kept: its target holds ours
            write_json_object(settings_file, new)
        else:
            settings_file.unlink()
            notes.append(f"deleted {show} (nothing else was in it)")
    return [f"(dry run) {n}" for n in notes] if dry_run else notes
