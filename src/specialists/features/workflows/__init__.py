"""Workflows: a scripted fan-out of child jobs with stable keys, a journal, receipts and resume.

A workflow run is a job (runner `workflow`): its agent process is the engine
(`python -m specialists.features.workflows.engine <job_dir>`), which runs a Python workflow from the
project or a declarative one, launches each child as an ordinary job whose record names the
workflow job as parent, journals every launch and end, and writes `workflow-receipt.json`
when it ends. docs/workflows.md is the user's account.
"""
