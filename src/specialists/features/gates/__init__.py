"""Gates and acceptance: verifying a child's work on the host (seed 004, issue 11 item 3).

A gate is one verification command run after a child in the child's working tree; its result
is evidence (a file in the job directory) and is memoized per tracked workspace state and
effective environment. Acceptance levels decide, from a child's structured report, the
evidence and verify commands, whether its work is accepted. Plain functions and frozen
dataclasses, independent of any workflow runtime; docs/gates.md is the API.
"""
