"""The conformance suite collected for `--target`: the session (`session`), its configuration
(`config`), the cases a run replays (`cases`) and the one replay-one-capture they use (`replay`),
the requests the client-wire tests derive (`client_wire_requests`, `prefix_reuse`), the pytest
hooks the plugin delegates to (`hooks`), and the conformance tests (test_*.py).

Tests added by other areas (test_loop.py, test_translation.py, test_load.py, test_context.py)
use the plugin's fixtures: `conformance_session`, `conformance_settings` and `conformance_ctx`
(a CheckContext: send, judge, record outcomes, fail with a failure folder)."""
