"""The two-node local Ray cluster of tests/integration/test_ray_executor.py, for tests/ray/.
Without the ray extra these tests are not collected (test_ray_executor.py skips itself)."""

import importlib.util

if importlib.util.find_spec("ray") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from tests.integration.test_ray_executor import cluster  # noqa: F401 - the fixture
