"""The command line of a detached supervisor (`python -m specialists.supervise <job_dir>`):
what its launcher (launch.py) passes and its entry point (__main__.py) reads. A leaf, so the
entry point can read it before it forks its keeper."""

LOCK_FD_ENV = "SPECIALISTS_LOCK_FD"  # the launcher passes the job's lock on this descriptor
REATTACH_FLAG = "--reattach"  # a supervisor that takes over a running job (reattach.py)
