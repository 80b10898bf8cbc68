"""The Anthropic Messages wire: its grammar (`grammar.py`), schemas (`schemas/`) and Dialect.

Rules: importing the package registers the Dialect (`ANTHROPIC`); nothing else lives here.
"""

from conformance.wire.anthropic.dialect import ANTHROPIC

__all__ = ["ANTHROPIC"]
