"""Root conftest of the project's own tests.

`pytester` is enabled here because pytest only honours `pytest_plugins` in the top-level conftest.
"""

pytest_plugins = ["pytester"]
