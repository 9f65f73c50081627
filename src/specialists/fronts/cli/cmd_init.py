"""`specialists init`: create .specialists/, keep it out of git, register with Claude Code."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from specialists.base.errors import StoreError, UserError
from specialists.store.files import read_bytes

if TYPE_CHECKING:
    from specialists.project import Project

GITIGNORE_ENTRY = ".specialists/"
MAX_GITIGNORE = 16 * 1024 * 1024
LOCAL_CONFIG_ENTRY = "specialists/config.local.toml"  # yours; specialists/config.toml is shared


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="set up .specialists/ in this project")
    p.add_argument(
        "--no-register",
        action="store_true",
        help="skip the Claude Code registration (.mcp.json, .claude/settings.json)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.store.paths import state_dir

    root = project.root
    for line in init_project(root):
        print(line)
    if not getattr(args, "no_register", False):
        from specialists.fronts.install import install, project_targets

        for line in install(project_targets(root)):
            print(line)
    print(f"ready: {state_dir(root)}")
    return 0


def init_project(root: Path) -> list[str]:
    """Create the state dirs and the .gitignore entry; returns what was done."""
    from specialists.store.paths import state_dir

    done = []
    base = state_dir(root)
    for sub in ("jobs",):  # notices are inbox events (notices.py): no ready/ any more
        path = base / sub
        if not path.is_dir():
            path.mkdir(parents=True)
            done.append(f"created {path.relative_to(root)}/")
    gitignore = root / ".gitignore"
    entries = (GITIGNORE_ENTRY, LOCAL_CONFIG_ENTRY)
    done += [f"added {e} to .gitignore" for e in entries if ensure_gitignored(gitignore, e)]
    return done


def ensure_gitignored(gitignore: Path, entry: str) -> bool:
    """Append `entry` to .gitignore unless an equivalent line is there. True if changed."""
    # Bytes that are not UTF-8 cannot match our entry; read past them, never rewrite them.
    # A link is followed (to a regular file only: one to /dev/zero or a FIFO is refused in
    # one line, not read forever); a file over MAX_GITIGNORE is refused too.
    try:
        raw = read_bytes(gitignore, MAX_GITIGNORE, follow=True)
    except FileNotFoundError:
        raw = b""
    except StoreError as exc:  # as install says of its files: bad input, exit 2
        from specialists.fronts.install import FIX_HINT

        raise UserError(f"{exc}; refusing to change it", hint=FIX_HINT) from None
    text = raw.decode("utf-8", "replace")
    wanted = {entry.rstrip("/"), entry, "/" + entry.rstrip("/"), "/" + entry}
    if any(line.strip() in wanted for line in text.splitlines()):
        return False
    prefix = "" if not text or text.endswith("\n") else "\n"
    with gitignore.open("a", encoding="utf-8") as f:
        f.write(f"{prefix}{entry}\n")
    return True
