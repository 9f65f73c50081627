"""Sandboxes: a private git worktree per job, merged back only by an explicit squash.

Seed 001 section 5.6 (R-S1..R-S9). The seam is `backend.SandboxBackend` (its docstring maps
each method onto jj too); `git.GitSandbox` implements it over the git CLI, `testing.FakeSandbox`
is its in-memory double. Per-sandbox records live in `.specialists/sandboxes/<id>.json`
beside the worktrees `.specialists/sandboxes/<id>/` (meta.py). The pure rules (ids, merged
or not, git's output formats) are in rules.py; squash.py and prune.py hold the two
operations with the most refusals.

Nothing on the fast paths (status, result, feed, hooks) imports this room.
"""
