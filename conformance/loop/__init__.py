"""Agent-loop driver and sandbox: whether a whole multi-turn tool loop completes through a target.

`driver.LoopDriver` / `driver.run_scenario` run one scenario (fixtures/scenarios/) on one wire,
starting from a real client's captured first request (`templates`); `conversation` holds how each
wire's client carries the conversation on after tool calls; `sandbox.Sandbox` plays a client's
tools (its persona) over a temporary directory, with one confinement policy (`confinement`), one
Bash interpreter (`shell`), the operations implemented once (`operations`, `patch`) and each
client's wording (`voices`); `report` is what a loop did; `scenarios` loads tasks and checks
completion on disk; `live` runs the real client CLIs.
"""
