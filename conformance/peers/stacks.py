"""The peer stacks: which real router/engine combinations the suite runs through, and how.

Rules:
- A stack is data: a name (also the report and fixture file name), the API its captures speak,
  the chain of components (client side first), which engine it needs, and the suite options.
- Stacks over the reference engine replay the whole bundled corpus for their API; stacks over a
  real model (Gemma 3 270M on llama.cpp or vLLM) replay trimmed captures (conformance.peers.trim)
  with long deadlines, so the whole peer run fits its CI budget.
- Every router stack passes the engine URL behind it (`--conformance-engine-url`) so failing
  exchanges are attributed to the router or the engine.
- Each router runs in two generations: "pinned" (LITELLM_VERSION, CCR_VERSION) and "next" (the
  newest release, LITELLM_NEXT_VERSION, CCR_NEXT_VERSION; versions in .ci/peers/versions.env or
  the environment). A next stack is its pinned twin with `-next` after the router's name
  (`NEXT_STACKS`): same captures, same paths, its own fixture, so the two can be compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Stack:
    name: str
    api: str  # anthropic | openai | responses: which captures go in
    chain: tuple[str, ...]  # components from the client side, e.g. ("litellm", "reference-engine")
    engine: str  # reference | llamacpp | vllm: the engine process it needs
    router: str = ""  # litellm | ccr | "" (the engine's own endpoint)
    litellm_path: str = ""  # chat | responses: LiteLLM's upstream call for Anthropic /v1/messages
    litellm_provider: str = "openai"
    real_model: bool = False
    description: str = ""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    generation: str = "pinned"  # pinned | next: which version of the router (module rules)

    @property
    def title(self) -> str:
        return " -> ".join(self.chain)


STACKS: tuple[Stack, ...] = (
    Stack("litellm-chat-engine", "anthropic", ("Anthropic captures", "LiteLLM (chat completions)", "reference engine"),
          "reference", router="litellm", litellm_path="chat",
          description="LiteLLM /v1/messages with LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES=True: "
                      "upstream /v1/chat/completions",
          # For this capture (thinking enabled) LiteLLM calls the upstream Responses API even with
          # the chat-completions flag, and the translation diff misreads Responses-shaped tools
          # and input as "not preserved" (tool names seen as ''): a suite-side false positive,
          # reported to the translation owner, left out until the diff reads that dialect.
          extra_args=("--deselect", "conformance/suite/test_translation.py::test_translation[claude-code/haiku]")),
    Stack("litellm-responses-engine", "anthropic", ("Anthropic captures", "LiteLLM (Responses API)", "reference engine"),
          "reference", router="litellm", litellm_path="responses",
          description="LiteLLM /v1/messages with its default for openai/ models: upstream /v1/responses"),
    Stack("ccr-engine", "anthropic", ("Anthropic captures", "claude-code-router", "reference engine"),
          "reference", router="ccr", description="claude-code-router: Anthropic in, OpenAI chat completions out"),
    Stack("litellm-openai-engine", "openai", ("OpenAI captures", "LiteLLM", "reference engine"),
          "reference", router="litellm", litellm_path="chat",
          description="LiteLLM /v1/chat/completions to the engine's /v1/chat/completions"),
    Stack("llamacpp-anthropic", "anthropic", ("Anthropic captures (trimmed)", "llama.cpp server /v1/messages"),
          "llamacpp", real_model=True, description="llama.cpp's own Anthropic endpoint, Gemma 3 270M"),
    Stack("llamacpp-openai", "openai", ("OpenAI captures (trimmed)", "llama.cpp server /v1/chat/completions"),
          "llamacpp", real_model=True, description="llama.cpp's own OpenAI endpoint, Gemma 3 270M"),
    Stack("litellm-llamacpp", "anthropic", ("Anthropic captures (trimmed)", "LiteLLM (Responses API)", "llama.cpp server"),
          "llamacpp", router="litellm", litellm_path="responses", real_model=True,
          description="LiteLLM default path (openai/ model: upstream /v1/responses) to llama.cpp"),
    Stack("vllm-anthropic", "anthropic", ("Anthropic captures (trimmed)", "vLLM /v1/messages"),
          "vllm", real_model=True, description="vLLM's own Anthropic endpoint, hermes tool parser"),
    Stack("vllm-openai", "openai", ("OpenAI captures (trimmed)", "vLLM /v1/chat/completions"),
          "vllm", real_model=True, description="vLLM's own OpenAI endpoint, hermes tool parser"),
    Stack("litellm-vllm", "anthropic", ("Anthropic captures (trimmed)", "LiteLLM (hosted_vllm/, chat completions)", "vLLM"),
          "vllm", router="litellm", litellm_path="chat", litellm_provider="hosted_vllm", real_model=True,
          description="LiteLLM's vLLM provider (hosted_vllm/): upstream /v1/chat/completions"),
    # The Responses wire (issue 15): run after the stacks above.
    Stack("litellm-codex-engine", "responses", ("Codex captures", "LiteLLM (/v1/responses)", "reference engine"),
          "reference", router="litellm", litellm_path="responses",
          description="LiteLLM /v1/responses (openai/ model) to the engine's /v1/responses: the Codex corpus "
                      "and the Codex loop",
          extra_args=("--conformance-client", "codex")),
    Stack("llamacpp-codex", "responses", ("Codex captures (trimmed)", "llama.cpp server /v1/responses"),
          "llamacpp", real_model=True, description="llama.cpp's own Responses endpoint, Gemma 3 270M",
          extra_args=("--conformance-client", "codex")),
    Stack("vllm-codex", "responses", ("Codex captures (trimmed)", "vLLM /v1/responses"),
          "vllm", real_model=True, description="vLLM's own Responses endpoint, hermes tool parser, Gemma 3 270M",
          extra_args=("--conformance-client", "codex")),
)


def next_generation(stack: Stack) -> Stack:
    """The stack's twin on the router's newest release: `litellm-chat-engine` ->
    `litellm-next-chat-engine`, `ccr-engine` -> `ccr-next-engine`."""
    head, _, rest = stack.name.partition("-")
    chain = tuple(f"{c} (next)" if i == 1 else c for i, c in enumerate(stack.chain))
    return replace(stack, name=f"{head}-next-{rest}", chain=chain, generation="next",
                   description=f"{stack.description} (the router's newest release)")


# The newest releases beside the pins: every LiteLLM path the pinned one has, and claude-code-router.
NEXT_STACKS: tuple[Stack, ...] = tuple(next_generation(s) for s in STACKS if s.router)
STACKS = STACKS + NEXT_STACKS


def twin(stack: Stack) -> Stack | None:
    """The other generation of the same stack (None for an engine's own endpoint)."""
    for s in STACKS:
        if s.router and s.router == stack.router and s.generation != stack.generation and \
                s.name.replace("-next-", "-", 1) == stack.name.replace("-next-", "-", 1):
            return s
    return None


def by_name(name: str) -> Stack:
    for s in STACKS:
        if s.name == name:
            return s
    raise KeyError(f"no peer stack named {name!r}; known: {', '.join(s.name for s in STACKS)}")
