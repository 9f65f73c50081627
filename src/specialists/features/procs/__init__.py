"""Background commands: `bg_run`, `bg_output`, `bg_cancel`, `bg_list` (seed 001 section 5.1).

A background command is a *proc job*: a job in the ordinary store, run under its own
detached supervisor, so `status`, `feed`, `stop`, gc and crash recovery cover it. Its output
(stdout and stderr merged, in arrival order) goes to the job's `output.log`; watch patterns
turn matching lines into batched, rate-limited `job_match` events for the owner, and the
end is exactly one `job_exit` event.

Pure cores here: watch patterns and batching (watch.py), UTF-8-safe reads of the log
(output.py), the bubblewrap command for `isolate` (isolate.py).
"""
