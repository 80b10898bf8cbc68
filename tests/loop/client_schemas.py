"""The real clients' tool schemas as they send them (long descriptions shortened): test data.

Measured on this machine from the first request of each client (Claude Code 2.1.197, opencode
1.18.33) against a loopback server; Claude Code 2.1.197 offers Glob and Grep when Bash is
disallowed (`--disallowedTools Bash`). The sandbox tests call every tool with the arguments these
schemas require, so a persona that names an argument wrongly fails there.
"""

SCHEMAS = {
    "claude-code": {
        "Bash": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "command": {
                    "description": "The command to execute",
                    "type": "string"
                },
                "timeout": {
                    "description": "Optional timeout in milliseconds (max 600000)",
                    "type": "number"
                },
                "description": {
                    "description": "Clear, concise description of what this command does in active voice. Never use words like \"complex\" or \"risk\" in...",
                    "type": "string"
                },
                "run_in_background": {
                    "description": "Set to True to run this command in the background.",
                    "type": "boolean"
                },
                "dangerouslyDisableSandbox": {
                    "description": "Set this to True to dangerously override sandbox mode and run commands without sandboxing.",
                    "type": "boolean"
                }
            },
            "required": [
                "command"
            ],
            "additionalProperties": False
        },
        "Edit": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "file_path": {
                    "description": "The absolute path to the file to modify",
                    "type": "string"
                },
                "old_string": {
                    "description": "The text to replace",
                    "type": "string"
                },
                "new_string": {
                    "description": "The text to replace it with (must be different from old_string)",
                    "type": "string"
                },
                "replace_all": {
                    "description": "Replace all occurrences of old_string (default False)",
                    "default": False,
                    "type": "boolean"
                }
            },
            "required": [
                "file_path",
                "old_string",
                "new_string"
            ],
            "additionalProperties": False
        },
        "Read": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "file_path": {
                    "description": "The absolute path to the file to read",
                    "type": "string"
                },
                "offset": {
                    "description": "The line number to start reading from. Only provide if the file is too large to read at once",
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 9007199254740991
                },
                "limit": {
                    "description": "The number of lines to read. Only provide if the file is too large to read at once.",
                    "type": "integer",
                    "exclusiveMinimum": 0,
                    "maximum": 9007199254740991
                },
                "pages": {
                    "description": "Page range for PDF files (e.g., \"1-5\", \"3\", \"10-20\"). Only applicable to PDF files. Maximum 20 pages per request.",
                    "type": "string"
                }
            },
            "required": [
                "file_path"
            ],
            "additionalProperties": False
        },
        "Write": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "file_path": {
                    "description": "The absolute path to the file to write (must be absolute, not relative)",
                    "type": "string"
                },
                "content": {
                    "description": "The content to write to the file",
                    "type": "string"
                }
            },
            "required": [
                "file_path",
                "content"
            ],
            "additionalProperties": False
        }
    },
    "opencode": {
        "bash": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command to execute"
                },
                "timeout": {
                    "minimum": -9007199254740991,
                    "exclusiveMinimum": 0,
                    "type": "integer",
                    "maximum": 9007199254740991,
                    "description": "Optional timeout in milliseconds"
                },
                "workdir": {
                    "type": "string",
                    "description": "The working directory to run the command in. Defaults to the current directory. Use this instead of 'cd' commands."
                }
            },
            "required": [
                "command"
            ]
        },
        "edit": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "filePath": {
                    "type": "string",
                    "description": "The absolute path to the file to modify"
                },
                "oldString": {
                    "type": "string",
                    "description": "The text to replace"
                },
                "newString": {
                    "type": "string",
                    "description": "The text to replace it with (must be different from oldString)"
                },
                "replaceAll": {
                    "type": "boolean",
                    "description": "Replace all occurrences of oldString (default False)"
                }
            },
            "required": [
                "filePath",
                "oldString",
                "newString"
            ]
        },
        "glob": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The glob pattern to match files against"
                },
                "path": {
                    "type": "string",
                    "description": "The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field..."
                }
            },
            "required": [
                "pattern"
            ]
        },
        "grep": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The regex pattern to search for in file contents"
                },
                "path": {
                    "type": "string",
                    "description": "The directory to search in. Defaults to the current working directory."
                },
                "include": {
                    "type": "string",
                    "description": "File pattern to include in the search (e.g. \"*.js\", \"*.{ts,tsx}\")"
                }
            },
            "required": [
                "pattern"
            ]
        },
        "read": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "filePath": {
                    "type": "string",
                    "description": "The absolute path to the file or directory to read"
                },
                "offset": {
                    "minimum": 0,
                    "type": "integer",
                    "maximum": 9007199254740991,
                    "description": "The line number to start reading from (1-indexed)"
                },
                "limit": {
                    "minimum": 0,
                    "type": "integer",
                    "maximum": 9007199254740991,
                    "description": "The maximum number of lines to read (defaults to 2000)"
                }
            },
            "required": [
                "filePath"
            ]
        },
        "write": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": "The content to write to the file"
                },
                "filePath": {
                    "type": "string",
                    "description": "The absolute path to the file to write (must be absolute, not relative)"
                }
            },
            "required": [
                "content",
                "filePath"
            ]
        }
    }
}


SCHEMAS["claude-code"].update({
    "Glob": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "pattern": {
                "description": "The glob pattern to match files against",
                "type": "string"
            },
            "path": {
                "description": "The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field...",
                "type": "string"
            }
        },
        "required": [
            "pattern"
        ],
        "additionalProperties": False
    },
    "Grep": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "pattern": {
                "description": "The regular expression pattern to search for in file contents",
                "type": "string"
            },
            "path": {
                "description": "File or directory to search in (rg PATH). Defaults to current working directory.",
                "type": "string"
            },
            "glob": {
                "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob",
                "type": "string"
            },
            "output_mode": {
                "description": "Output mode: \"content\" shows matching lines (supports -A/-B/-C context, -n line numbers, head_limit),...",
                "type": "string",
                "enum": [
                    "content",
                    "files_with_matches",
                    "count"
                ]
            },
            "-B": {
                "description": "Number of lines to show before each match (rg -B). Requires output_mode: \"content\", ignored otherwise.",
                "type": "number"
            },
            "-A": {
                "description": "Number of lines to show after each match (rg -A). Requires output_mode: \"content\", ignored otherwise.",
                "type": "number"
            },
            "-C": {
                "description": "Alias for context.",
                "type": "number"
            },
            "context": {
                "description": "Number of lines to show before and after each match (rg -C). Requires output_mode: \"content\", ignored otherwise.",
                "type": "number"
            },
            "-n": {
                "description": "Show line numbers in output (rg -n). Requires output_mode: \"content\", ignored otherwise. Defaults to True.",
                "type": "boolean"
            },
            "-i": {
                "description": "Case insensitive search (rg -i)",
                "type": "boolean"
            },
            "-o": {
                "description": "Print only the matched (non-empty) parts of each matching line, one match per output line (rg -o / --only-matching)....",
                "type": "boolean"
            },
            "type": {
                "description": "File type to search (rg --type). Common types: js, py, rust, go, java, etc. More efficient than include for standard...",
                "type": "string"
            },
            "head_limit": {
                "description": "Limit output to first N lines/entries, equivalent to \"| head -N\". Works across all output modes: content (limits...",
                "type": "number"
            },
            "offset": {
                "description": "Skip first N lines/entries before applying head_limit, equivalent to \"| tail -n +N | head -N\". Works across all...",
                "type": "number"
            },
            "multiline": {
                "description": "Enable multiline mode where . matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: False.",
                "type": "boolean"
            }
        },
        "required": [
            "pattern"
        ],
        "additionalProperties": False
    }
})
