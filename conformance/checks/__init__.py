"""Checks by area, all registered in `conformance.core.registry` (the one registry)."""
