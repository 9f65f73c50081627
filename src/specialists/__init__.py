"""specialists: delegate work to specialist coding agents as supervised background jobs."""

__version__ = "0.1.0"
