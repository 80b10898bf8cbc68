"""Agent-loop driver and sandbox: whether a whole multi-turn tool loop completes through a target.

`driver.LoopDriver` / `driver.run_scenario` run one scenario (fixtures/scenarios/) in one dialect
starting from a real client's captured first request; `conversation` holds how each wire's real
client carries the conversation on after tool calls; `sandbox.Sandbox` runs the real clients'
tools over a temporary directory; `scenarios` loads tasks and checks completion on disk.
"""
