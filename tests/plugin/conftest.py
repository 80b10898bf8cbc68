"""The suite-running fixtures (tests/suite_runner.py)."""

from suite_runner import engine_url, suite  # noqa: F401  (pytest finds the fixtures by these names)
