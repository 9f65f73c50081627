"""Executors: where a job's agent process runs, below the supervisor (docs/executors.md).

The seam is `base.ProcessHost.spawn`: the runners start their agent through a host instead of
starting it themselves. With no host (the default, `local`) they get today's
`process.agent.AgentProcess`, at no extra cost. The Ray executor is a host whose processes run
on a cluster node, inside one async actor per node that multiplexes many agents, and whose
stdout and stderr stream back into the same runner code; the local supervisor stays the only
writer of the job's files. The fake beside the seam is `testing.LoopbackNode`: the node core
driven in this process, without Ray.

Nothing here is imported by the fast paths, and `ray` itself only by jobs that use it.
"""
