"""`specialists install --pi` / `uninstall --pi`: our extension in pi's settings.json.

pi 1.x loads every path listed under `extensions` in `.pi/settings.json` (project; only once
the project is trusted, see cli/cmd_install.py's note) and `$PI_CODING_AGENT_DIR/settings.json`
(user; default ~/.pi/agent/settings.json). We add the
absolute path of the installed `pi_extension/index.ts`, and nothing else. An entry ending in
`specialists/pi_extension/index.ts` is ours (an older install at another path is replaced);
uninstall removes exactly those entries, then `extensions` if we emptied it, then the file if
nothing else is left. A file that is not a JSON object is refused, untouched.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path
from typing import Any

from specialists.errors import UserError
from specialists.install import load_json_object, write_json_object
from specialists.pi_extension import EXTENSION_FILE

OURS_SUFFIX = "/specialists/pi_extension/index.ts"

Doc = dict[str, Any]


def project_settings(root: Path) -> Path:
    return root / ".pi" / "settings.json"


def user_settings() -> Path:
    agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
    base = Path(agent_dir).expanduser() if agent_dir else Path.home() / ".pi" / "agent"
    return base / "settings.json"


def _is_ours(entry: object) -> bool:
    return isinstance(entry, str) and entry.replace("\\", "/").endswith(OURS_SUFFIX)


def _extensions(doc: Doc, where: str) -> list[Any] | None:
    value = doc.get("extensions")
    if value is not None and not isinstance(value, list):
        raise UserError(
            f"{where}: `extensions` is a {type(value).__name__}, expected a list",
            hint="fix the file by hand; nothing was changed",
        )
    return value


def merge(doc: Doc, where: str, path: str = str(EXTENSION_FILE)) -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    entries = _extensions(out, where)
    if entries is None:
        entries = out["extensions"] = []
    if path in entries:
        return out, [f"pi extension already in {where}"]
    stale = [e for e in entries if _is_ours(e)]
    out["extensions"] = [e for e in entries if not _is_ours(e)] + [path]
    said = "replaced an older specialists entry" if stale else "added the specialists extension"
    return out, [f"{said} in {where}: {path}"]


def unmerge(doc: Doc, where: str) -> tuple[Doc, list[str]]:
    out = copy.deepcopy(doc)
    entries = _extensions(out, where)
    if not entries or not any(_is_ours(e) for e in entries):
        return out, [f"no specialists extension in {where}"]
    kept = [e for e in entries if not _is_ours(e)]
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
    if shutil.which("specialists") is None and not os.environ.get("SPECIALISTS_CMD"):
        notes.append(
            "note: `specialists` is not on PATH; the extension starts `specialists sidecar`, "
            "so put it there or set SPECIALISTS_CMD"
        )
    return [f"(dry run) {n}" for n in notes] if dry_run else notes


def uninstall_pi(settings_file: Path, *, show: str, dry_run: bool = False) -> list[str]:
    doc = load_json_object(settings_file)
    if doc is None:
        return [f"no {show}"]
    new, notes = unmerge(doc, show)
    if new != doc and not dry_run:
        if new:
            write_json_object(settings_file, new)
        else:
            settings_file.unlink()
            notes.append(f"deleted {show} (nothing else was in it)")
    return [f"(dry run) {n}" for n in notes] if dry_run else notes
