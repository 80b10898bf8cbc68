"""Forwarding module: `python -m conformance.clients.recapture` keeps working; the recapture of
the bundled corpus lives in `conformance.capture.recapture`."""

from conformance.capture.recapture import *  # noqa: F401,F403
from conformance.capture.recapture import main

if __name__ == "__main__":
    raise SystemExit(main())
