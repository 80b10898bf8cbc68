"""Fixtures of the client profile tests: a launcher environment with no client CLI in it."""

from tests.clients.fake_cli import clean_env  # noqa: F401 - a fixture
