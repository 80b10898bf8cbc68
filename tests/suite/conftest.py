"""The suite-running fixtures (tests/suite_runner.py) and a launcher environment with no client
CLI in it (tests/clients/fake_cli.py)."""

from suite_runner import engine_url, suite  # noqa: F401  (pytest finds the fixtures by these names)

from tests.clients.fake_cli import clean_env  # noqa: F401 - a fixture
