"""The OpenAI Responses wire (Codex CLI's): its grammar, schemas and Dialect.

Rules: importing the package registers the Dialect (`RESPONSES`); nothing else lives here.
"""

from conformance.wire.responses.dialect import RESPONSES

__all__ = ["RESPONSES"]
