"""Size limits on what a target may send (`suite.limits.*`): the suite's own work stays bounded.

Rules:
- The transport counts bytes as they arrive and stops reading past a cap
  (`conformance.net.transport.Limits`, options `--conformance-max-response-bytes`,
  `--conformance-max-line-bytes`, `--conformance-max-event-bytes`); the exchange then carries a
  `limit_*` error kind, and this module names the check each kind fails. Nothing after it is
  judged: the body was cut on purpose.
- The ids are reported by the exchange judge's first check (checks/suite.py, transport), and judge
  the stack: what the target sent.
- A cap is a violation, not a crash or a hang: the target sent more than any client can use,
  and a client that buffers events (every SDK does) would run out of memory on it.
"""

from __future__ import annotations

from conformance.core.registry import register

RESPONSE_SIZE = register(
    "suite.limits.response_size",
    "the whole response stays under the maximum response size",
    description="Counted on the raw bytes; the default cap is 64 MiB (--conformance-max-response-bytes).",
    likely_cause="a runaway generation with no output cap, or a target that never ends a body",
    scope="exchange",
    judges="stack",
).id

LINE_SIZE = register(
    "suite.limits.line_size",
    "no event-stream line is longer than the maximum line size",
    description=("Bytes between two line ends (LF, CR or CRLF) of a text/event-stream body; default cap "
                 "8 MiB (--conformance-max-line-bytes)."),
    likely_cause="a stream that never writes a line end (a broken framer, a binary body labelled as SSE)",
    scope="exchange",
    judges="stack",
).id

EVENT_SIZE = register(
    "suite.limits.event_size",
    "no event is larger than the maximum event size",
    description=("Bytes between two blank lines of a text/event-stream body; default cap 16 MiB "
                 "(--conformance-max-event-bytes)."),
    likely_cause="a target that never ends an event (no blank line), or packs a whole answer into one event",
    scope="exchange",
    judges="stack",
).id

# transport error kind -> the check it fails
LIMIT_CHECK = {
    "limit_response_size": RESPONSE_SIZE,
    "limit_line_size": LINE_SIZE,
    "limit_event_size": EVENT_SIZE,
}
