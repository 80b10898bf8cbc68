"""Which layer broke: what reached the engine (`hop`), the independent minimal translation
(`minimal`) and the attribution of a failure to the router, the engine, both or neither.

Rules: a floor above `report`; it judges through `conformance.checks` and never re-implements a
wire rule.
"""
