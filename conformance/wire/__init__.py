"""The wires, sans-IO: bytes -> SSE events -> one protocol state machine per wire -> accumulated
message, and one Dialect per wire that reads and writes its requests.

Rules: no sockets, no files but the schemas; modules here import only `conformance.core` and each
other. One package per wire (`anthropic/`, `chat/`, `responses/`: grammar, schemas, Dialect);
`sse` decodes event streams, `base` holds what the grammars share, `dialect` the Dialect base,
the neutral conversation model and the registry. Importing this package registers the built-in
wires, so `dialect(name)` and `dialect_for_path(path)` know them wherever they are asked.
"""

from conformance.wire.anthropic import ANTHROPIC
from conformance.wire.chat import CHAT
from conformance.wire.dialect import DIALECTS, Dialect, dialect, dialect_for_path
from conformance.wire.responses import RESPONSES

__all__ = ["ANTHROPIC", "CHAT", "DIALECTS", "RESPONSES", "Dialect", "dialect", "dialect_for_path"]
