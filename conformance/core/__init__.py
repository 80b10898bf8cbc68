"""The ground floor: data and registries every other floor builds on (failures as data, the check
registry, the results record, JSON files, bundled-data paths).

Rules: modules here import nothing above `conformance.core`; this package `__init__` imports
nothing at all, so the reference engine and router can use `conformance.core.paths` without
loading any of the judge.
"""
