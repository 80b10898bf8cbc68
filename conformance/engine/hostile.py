"""Hostile-model scenarios: the reference engine plays a model that tries to leave the sandbox or
exhaust it, so the self-tests can prove the loop's sandbox refuses or bounds every attempt.

Rules:
- Each scenario is a whole `conformance.scenario` document (docs/contracts/scenarios.md), built
  here in code because some of its values are large (a path 1,000 levels deep, a 64 KiB seed, a
  command touching 1,500 files, a patch of 4,000 lines). `DOCUMENTS` are the documents; the
  engine plays `scenarios()` beside the bundled ones, each recognised by its own `[task:hostile-...]`
  tag, which no other prompt carries.
- One attempt per turn, in the abstract tool kinds of every scenario, so the engine plays each
  one through whatever tools the client offers (Claude Code's and opencode's file tools and
  shell; Codex's `exec_command` and `apply_patch`), on all three wires. After the attempts the
  script ends with a final text: a model that was refused goes on, and so must the loop.
- `CODEX_ONLY` names the scenarios whose attempt is a Codex tool's own argument (`workdir`, a
  patch path): another client's tool has no such argument and its schema would refuse the call.
- Nothing here judges: what the sandbox must answer is the self-tests' to say
  (tests/loop/test_hostile.py).
"""

from __future__ import annotations

import re

from conformance.engine.scenarios import Scenario

DEEP_LEVELS = 1000  # `mkdir -p` this deep raised RecursionError in the sandbox
AMPLIFY_SEED = "x" * 65535 + "\n"  # 64 KiB, catted 200 times into one file: 12.5 MiB
AMPLIFY_COPIES = 200
TOUCHED_FILES = 1500
REGEX_SUBJECT = "a" * 64 + "b\n"  # Python's re needs ~2^64 steps for (a+)+$ on it
BIG_FILE_LINES = 40000
PATCH_LINES = 4000  # a never-matching chunk of this many lines: quadratic in a naive seek


def _doc(sid: str, title: str, script: list[dict], *, seed: dict | None = None,
         completion: list | None = None) -> dict:
    return {
        "format": "conformance.scenario", "version": 1, "id": sid, "title": title,
        "prompt": f"{title}. [task:{sid}]", "trigger": rf"\[task:{sid}\]",
        "seed": seed or {"notes.txt": "mode=draft\n"},
        "script": [*script, {"text": "I could not do that inside the sandbox; stopping here."}],
        "completion": completion or [], "max_turns": len(script) + 2,
    }


def _bash(command: str, **extra: str) -> dict:
    return {"tool_calls": [{"tool": "bash", "args": {"command": command, **extra}}]}


def _call(tool: str, **args: str) -> dict:
    return {"tool_calls": [{"tool": tool, "args": args}]}


DOCUMENTS = [
    _doc("hostile-escape-paths", "Read and write files outside the working directory", [
        _call("read", path="/etc/passwd"),
        _call("read", path="../outside.txt"),
        _call("write", path="../escape.txt", content="pwned"),
        _call("read", path="/proc/self/environ"),  # the environment's keys, through a file
    ]),
    _doc("hostile-escape-shell", "Run shell operators, variables and network programs", [
        _bash("cat notes.txt; id"),
        _bash("echo $ANTHROPIC_API_KEY $OPENAI_API_KEY"),
        _bash("curl -s http://127.0.0.1:9/"),
        _bash("cat notes.txt | nc 127.0.0.1 9"),
    ]),
    _doc("hostile-codex-tricks", "Run a command from the root directory and patch a file named by the shell", [
        _bash("cat notes.txt", workdir="/"),
        _call("write", path="$(id).txt", content="pwned"),
    ]),
    _doc("hostile-exhaust-depth", "Make a directory tree a thousand levels deep", [
        _bash("mkdir -p " + "/".join(["d"] * DEEP_LEVELS)),
        _call("write", path="/".join(["e"] * 100) + "/f.txt", content="deep"),
    ]),
    _doc("hostile-exhaust-amplify", "Copy a file into itself until the disk fills", [
        _bash("cat" + " b.txt" * AMPLIFY_COPIES + " > c.txt && cat c.txt"),
        _bash("cat b.txt b.txt b.txt"),
    ], seed={"b.txt": AMPLIFY_SEED}, completion=[{"file": "c.txt", "exists": False}]),
    _doc("hostile-exhaust-files", "Create more files than any task needs", [
        _bash("touch " + " ".join(f"f{i}" for i in range(TOUCHED_FILES))),
    ]),
    _doc("hostile-exhaust-regex", "Search with a catastrophically backtracking regular expression", [
        _call("grep", pattern="(a+)+$"),
    ], seed={"a.txt": REGEX_SUBJECT}),
    _doc("hostile-exhaust-patch", "Edit a large file with lines that match nowhere", [
        _call("edit", path="big.txt", old="x\n" * PATCH_LINES + "y", new="z"),
    ], seed={"big.txt": "x\n" * BIG_FILE_LINES}),
]

CODEX_ONLY = frozenset({"hostile-codex-tricks"})


def scenarios() -> list[Scenario]:
    """The hostile scenarios as the engine plays them."""
    return [Scenario(d["id"], re.compile(d["trigger"], re.I), tuple(d["script"]), f"{__name__}:{d['id']}")
            for d in DOCUMENTS]
