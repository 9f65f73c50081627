"""Attention: telling a job's owner, once per state, that the job may want a look.

Two concerns, each a pure core with a thin adapter (docs/attention.md):

- `watch.py` decides from the job's event facts and a clock when to raise `needs_attention`
  (a quiet agent, a tool call open too long, failed mutating tool calls in a row);
  `notice.py` words the notice and posts it to the owner's inbox.
- `watchdog.py` decides at each end of turn whether the job's working tree changed since
  the last review (`tree.py` computes the state key with git); `review.py` starts the
  reviewer specialist as an ordinary child job.

`settings.py` resolves both from config.toml, the definition and the run's options. The
supervisor's hook is `supervise/attending.py`.
"""
