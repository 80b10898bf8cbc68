"""`locust -f conformance/locust/locustfile.py --host URL ...`: the conformance Users (see users.py)."""

from conformance.locust.users import CaptureReplayUser, LoopUser  # noqa: F401  (Locust collects the User classes)
