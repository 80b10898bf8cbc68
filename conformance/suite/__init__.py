"""The conformance suite collected for `--target`: the session, its configuration, the client
helpers, the pytest hooks the plugin delegates to, and the conformance tests (test_*.py).

Tests added by other areas (test_loop.py, test_translation.py, test_load.py, test_context.py)
use the plugin's fixtures: `conformance_session`, `conformance_settings` and `conformance_ctx`
(a CheckContext: send, judge, record outcomes, fail with a failure folder)."""
