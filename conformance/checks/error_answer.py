"""Judge the answer to a deliberately invalid request (the suite's error-envelope test).

Rules:
- The request is one the API must refuse (e.g. `messages` a string). The right answer is a 4xx
  in the API's error envelope (Anthropic `{"type": "error", "error": {"type", "message"}}`,
  OpenAI `{"error": {"message", "type", ...}}`), judged by the wire core's `check_error`.
- A 2xx (the invalid request was accepted) and a 5xx (the layer crashed on it) are
  `suite.error.envelope` errors; a transport failure is left to the exchange judge (reachable,
  deadlines), so this returns nothing for it.
- The same judge serves the test and attribution: the router's answer and the engine's answer to
  the same invalid request are compared by these violations, not by `suite.request.accepted`
  (which every correct refusal would fail).
"""

from __future__ import annotations

from conformance.checks import suite as suite_checks
from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect


def check_error_answer(raw: RawExchange, wire: Dialect) -> list[Violation]:
    """Violations of the answer to a request that had to be refused (empty: refused correctly)."""
    if raw.status is None:
        return []
    if 200 <= raw.status < 300:
        return [violation(suite_checks.ERROR_ENVELOPE, "the target accepted a request whose messages is not a list",
                          expected="a 4xx error in the API's error envelope", seen=f"HTTP {raw.status}",
                          pointer="/messages")]
    out = list(wire.check_error(raw.status, raw.body()))
    if not any(v.is_error for v in out) and not 400 <= raw.status < 500:
        out.append(violation(suite_checks.ERROR_ENVELOPE, "an invalid request was answered with a server error, not a 4xx",
                             expected="4xx (invalid_request_error)", seen=f"HTTP {raw.status}"))
    return out
