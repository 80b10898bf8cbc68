"""Live drivers for the real Claude Code and opencode CLIs (marker `live`).

`conformance.clients.live.run_live(client, scenario, target, ...)` runs the installed CLI itself
on one scenario in a temporary project directory, through the capture proxy, and judges both the
wire traffic and the task's completion on disk. See conformance/clients/live.py for the rules.
"""

from conformance.clients.live import CLIENTS, LiveReport, find_binary, run_live

__all__ = ["CLIENTS", "LiveReport", "find_binary", "run_live"]
