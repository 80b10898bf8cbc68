"""load.phase.*: the two phases of generation as figures, so a change can be attributed to one.

Rules: both ids are info (figures, never a pass/fail on their own), probe verdicts (scope `probe`)
that judge the serving stack (`stack`: how fast it prefills and decodes); the probe is
conformance/probes/phases.py, run by conformance/suite/test_perf.py (opt-in `-m perf`); what
moved between two runs is said by `conformance report compare` (conformance/report/compare.py).
"""

from __future__ import annotations

from conformance.core.registry import register

PREFILL_RATE = "load.phase.prefill_rate"
DECODE_RATE = "load.phase.decode_rate"

register(PREFILL_RATE,
         "prefill tokens/s = input tokens / time to first token, salted, at fixed prompt lengths, K repeats (figures)",
         description="Input tokens (the target's usage count) over the time to the first content, with a salted "
                     "system prompt so no prefix cache serves it, at 256 / 1k / 2k prompt tokens with thinking off; "
                     "each length repeated K times, reported as min / median / max.",
         severity="info",
         likely_cause="a prefill change: chunked prefill, attention kernel, batch scheduling or a cache that "
                      "served a prompt it should not have",
         scope="probe",
         judges="stack")
register(DECODE_RATE,
         "decode tokens/s = output tokens / time after the first token, single stream and by concurrency (figures)",
         description="Output tokens (usage) over the time from the first content to the end of the stream, one "
                     "stream alone and at the load levels (median of the streams of a level), K repeats each.",
         severity="info",
         likely_cause="a decode change: sampling, kernels, speculative decoding, CUDA graphs or batch size",
         scope="probe",
         judges="stack")
