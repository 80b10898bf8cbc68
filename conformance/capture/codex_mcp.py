"""A read-only stdio MCP server for the Codex recapture: `python3 codex_mcp.py ROOT`.

Codex offers an MCP server's tools to the model as one `namespace` tool (`mcp__<server>`), which
is how the corpus gets a real namespaced call. This server has one tool, `read_file {path}`, that
returns the text of a file inside ROOT (the case's scratch project).

Rules:
- Read only, confined: a path is resolved (symlinks too) and must stay inside ROOT, else the call
  is an error result; nothing is ever written. MCP servers run outside Codex's command sandbox, so
  this confinement is the server's own.
- The wire is MCP's stdio transport: one JSON-RPC 2.0 message per line on stdin/stdout
  (`initialize`, `notifications/initialized`, `tools/list`, `tools/call`, `ping`); unknown
  methods get JSON-RPC error -32601. Standard library only (it runs as a plain script).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PROTOCOL_VERSION = "2025-06-18"
READ_FILE = {
    "name": "read_file",
    "description": "Read a text file of the project",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
}


def read_file(root: Path, path: str) -> tuple[str, bool]:
    """(text, is_error) for one call: the file's text, or why it cannot be read."""
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        return f"{path}: outside the project folder", True
    try:
        return target.read_text(encoding="utf-8"), False
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: {e.strerror if isinstance(e, OSError) else 'not UTF-8 text'}", True


def answer(root: Path, msg: dict) -> dict | None:
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:  # a notification (notifications/initialized, cancelled): no answer
        return None
    if method == "initialize":
        result = {"protocolVersion": msg.get("params", {}).get("protocolVersion", PROTOCOL_VERSION),
                  "capabilities": {"tools": {"listChanged": False}},
                  "serverInfo": {"name": "files", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": [READ_FILE]}
    elif method == "tools/call":
        params = msg.get("params") or {}
        args = params.get("arguments") or {}
        if params.get("name") != "read_file" or not isinstance(args.get("path"), str):
            text, err = f"unknown tool or arguments: {params.get('name')!r}", True
        else:
            text, err = read_file(root, args["path"])
        result = {"content": [{"type": "text", "text": text}], "isError": err}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: codex_mcp.py ROOT (the folder whose files read_file may return)", file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            reply = answer(root, msg) if isinstance(msg, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
