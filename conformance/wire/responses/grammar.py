"""OpenAI Responses API wire: the grammar as its Dialect offers it (`RESPONSES.grammar`).

Rules: the four functions every wire's grammar offers, and nothing else: `check_stream`
(stream.py), `check_response`, `check_error`, `content_started` (answer.py). The rule ids and
tables are `rules.py`; the item half of the stream machine is `items.py`.
"""

from __future__ import annotations

from conformance.wire.responses.answer import check_error, check_response, content_started
from conformance.wire.responses.stream import check_stream

__all__ = ["check_error", "check_response", "check_stream", "content_started"]
