"""Moved to specialists.process (agent, lines, spawn): this module only keeps the pi runner's
imports working until it imports from there. Nothing new should import it; delete it then."""

from __future__ import annotations

from specialists.process.agent import AgentProcess
from specialists.process.lines import OVERSIZED_HEAD, OversizedLine
from specialists.process.spawn import exit_status as exit_description

__all__ = ["OVERSIZED_HEAD", "AgentProcess", "OversizedLine", "exit_description"]
