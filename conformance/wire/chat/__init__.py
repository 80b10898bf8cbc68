"""The OpenAI chat-completions wire (named `openai`): its grammar, schemas and Dialect.

Rules: importing the package registers the Dialect (`CHAT`); nothing else lives here.
"""

from conformance.wire.chat.dialect import CHAT

__all__ = ["CHAT"]
