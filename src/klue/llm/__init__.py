"""Prompted generative LMs on the KLUE tasks, scored with the official metrics (`klue llm`).

- `spec.py`: model specs (`hf:NAME_OR_DIR`, `openai:MODEL@BASE_URL`, ...) -> a backend, by the prefix
  registry `backends.KINDS`.
- `backends/`: the in-process transformers backend (`hf.py`) and the OpenAI-compatible HTTP one (`openai.py`),
  both behind `backends/base.Backend` (log-likelihoods of continuations, greedy generation).
- `cache.py`: the SQLite request cache: a run resumes without asking the model again.
- `run.py`: the producer: prompts from each task's `prompts.py`, few-shot examples from the training part,
  predictions.jsonl + llm_outputs.jsonl, scored by the one judge.
"""
