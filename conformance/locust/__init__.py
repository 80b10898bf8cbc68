"""Load beyond one core and one machine on Locust (optional extra: `pip install 'agent-loop-conformance[locust]'`).

Rules:
- `conformance.locust.users` holds the Locust `User` classes; `locustfile.py` beside it is what
  `locust -f` runs. `CaptureReplayUser` replays the captured conversations (every model request
  of every capture, in order, round robin); `LoopUser` runs the agent-loop scenarios with the
  suite's loop driver (model output and sandboxed tool results appended each turn). Both send
  with Locust's own HTTP client, record the raw response bytes with their arrival times, and hand
  them to the suite's sans-IO judge (`conformance.checks.exchange.check_exchange`, the same judge
  every other front end uses).
- A protocol violation is a Locust failure named by its check ids ("anthropic.stream.grammar,
  ..."), so Locust's failure table counts them per check; a loop run is one `LOOP` entry.
- Each Locust process writes its own results record (`<report dir>/results/results-locust-<host>-<pid>.jsonl`,
  conformance.core.results); `python -m conformance.locust merge <report dir>` merges every
  worker's record into the usual reports (summary.md) and exits 1 when anything failed.
- Multi-core is Locust's own: `--processes N` forks N local workers; several machines are
  Locust's `--master` / `--worker --master-host`. There is no second worker mechanism here.
- Nothing in the plugin, the CLI or the default run imports this package, locust or gevent
  (tests/locust/test_locust.py asserts it): gevent monkey-patches the standard library.
"""
