"""Asking the supervisor: a child job's questions to whoever supervises it, and the replies."""
