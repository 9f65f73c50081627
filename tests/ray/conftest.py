"""The two-node local Ray cluster of tests/integration/test_ray_executor.py, for tests/ray/."""

from tests.integration.test_ray_executor import cluster  # noqa: F401 - the fixture
