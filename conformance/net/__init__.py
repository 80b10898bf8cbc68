"""Talking to a target the way a real client does: one `Target` and one `send()` every sender uses
(`target`), the transport with its deadlines and raw bytes with arrival times (`transport`), and
the request shaping (headers, URL joining, serialisation and the run salt: `client`; a body is
changed only by its wire's Dialect).

Rules: imports only `conformance.core` and `conformance.wire`; judges nothing.
"""
