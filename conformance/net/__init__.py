"""Talking to a target the way a real client does: one `Target` and one `send()` every sender uses
(`target`), the transport with its deadlines and raw bytes with arrival times (`transport`), and
the request shaping (headers, URL joining, body mutations: `client`).

Rules: imports only `conformance.core` and `conformance.wire`; judges nothing.
"""
