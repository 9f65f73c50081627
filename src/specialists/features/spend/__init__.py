"""Spend: ceilings over a tree of jobs, and approval before a costly fan-out (docs/spend.md)."""
