"""The wires, sans-IO: bytes -> SSE events -> one protocol state machine per wire -> accumulated
message, and one Dialect per wire that reads and writes its requests.

Rules: no sockets, no files but the schemas; modules here import only `conformance.core` and each
other. One package per wire (`anthropic/`, `chat/`, `responses/`: grammar, schemas, Dialect);
`sse` decodes event streams, `base` holds what the grammars share, `conversation` the neutral
model of a conversation, `dialect` the Dialect base (its request writers: `writers`), `registry`
the registry of wires. Importing this package registers the built-in wires, so `dialect(name)`
and `dialect_for_path(path)` know them wherever they are asked.
"""

from conformance.wire.anthropic import ANTHROPIC
from conformance.wire.chat import CHAT
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS, dialect, dialect_for_path
from conformance.wire.responses import RESPONSES

__all__ = ["ANTHROPIC", "CHAT", "DIALECTS", "RESPONSES", "Dialect", "dialect", "dialect_for_path"]
