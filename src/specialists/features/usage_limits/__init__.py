"""Usage limits: a job that meets one pauses until its reset, and its provider is held."""
