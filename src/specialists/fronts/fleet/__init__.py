"""The fleet read model: what `specialists top` and `specialists web` show.

A pure core over the job store, shared by both views and free of any UI framework: row
sources (jobs today; timers, procs and threads slot in as more sources), the tree they form,
and a feed tail read by byte offset. Nothing here is imported by status/result/feed/hooks.
"""
