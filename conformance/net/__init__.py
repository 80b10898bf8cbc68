"""Talking to a target the way a real client does: the transport with its deadlines and raw bytes
with arrival times, and the request shaping (headers, URL joining, body mutations).

Rules: imports only `conformance.core` and `conformance.wire`; judges nothing.
"""
