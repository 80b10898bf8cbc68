"""Checks by area, all registered in `conformance.checks.registry` (the one registry)."""
