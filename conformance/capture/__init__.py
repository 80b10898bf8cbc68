"""Captures: the versioned capture format, the recording proxy, the one redactor, the structural
diff of two corpora and the recapture of the bundled corpus from the real clients.

Rules: secrets are removed here and only here (`redact`), before anything touches disk; modules
import `core`, `wire`, `net` and `checks`, never a floor above.
"""
