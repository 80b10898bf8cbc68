"""pytest11 entry point of conformance (the option group, markers, fixtures and hooks).

Rules: inert unless `--target` (or CONFORMANCE_TARGET) is given; hooks are a few lines that
delegate to the session object in `conformance.suite`; SDKs are imported lazily; state lives in
`config.stash`. Options other than --target start with --conformance- (docs/contracts/options.md).
"""

from __future__ import annotations
