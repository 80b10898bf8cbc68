"""The wires, sans-IO: bytes -> SSE events -> one protocol state machine per wire -> accumulated
message, with the JSON Schemas of every event, chunk, response and error envelope.

Rules: no sockets, no files but the schemas; modules here import only `conformance.core` and each
other. One module per wire (`anthropic`, `openai`); `base` holds what they share.
"""
