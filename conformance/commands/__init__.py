"""Subcommands of `conformance`; see conformance/cli.py for the module contract."""
