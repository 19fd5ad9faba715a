"""LLM backends, one module each, found by the prefix of a model spec (`klue.llm.spec`).

`KINDS` is the registry: one line per backend, with what the CLI's help and the errors say of it. A
backend's module defines

    check_target(target: str) -> None   # refuse a malformed spec (what follows the prefix) with a DataError
    open_backend(target: str, options: ServerOptions) -> Backend   # load the model or reach the server

and its backend class implements `base.Backend` (`base.BackendBase` gives the defaults). Adding a backend
is that module plus one line here. The modules are imported only when a spec of their kind is parsed, so
listing the kinds needs none of their libraries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendKind:
    prefix: str  # a model spec of this kind starts with it: "hf:"
    form: str  # how such a spec is written: "hf:NAME_OR_DIR"
    description: str  # what it is, for the help and the errors
    module: str  # the module with `check_target` and `open_backend`
    uses_gpu: bool  # whether it computes on this machine's GPU (the benchmark gives its cells one)
    install: str = "klue[llm]"  # what to install when the module's libraries are missing

    @property
    def name(self) -> str:
        return self.prefix.removesuffix(":")


KINDS: tuple[BackendKind, ...] = (
    BackendKind("hf:", "hf:NAME_OR_DIR", "a transformers causal LM in this process: a hub name, a directory or a .gguf file", "klue.llm.backends.hf",
                uses_gpu=True, install="klue[train,llm]"),
    BackendKind("openai:", "openai:MODEL@BASE_URL", "any OpenAI-compatible server: vLLM, llama.cpp, SGLang, a "
                "hosted API", "klue.llm.backends.openai", uses_gpu=False),
)
