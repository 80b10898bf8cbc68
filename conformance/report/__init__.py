"""Reports from the results record: failure folders, reports/summary.md, JUnit properties and the
baseline gate. Every module here reads `conformance.core.results` records or the Violations a check
produced; none re-derives a verdict."""
