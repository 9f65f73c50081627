"""Threads: child jobs that report to their parent (seed 001 sections 1.4 and 5.5).

This round holds the pure cores the thread tools are built on: `reports` (structured child
reports, R-H6a and R-RLM2: validation, the size cap, encoding, rendering for the parent) and
`coverage` (`assess_coverage`, R-RLM3). Standard library only.
"""
