"""OS processes: the one place that starts them (spawn), agents (agent), short commands (short)."""
