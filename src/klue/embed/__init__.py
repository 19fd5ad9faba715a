"""Sentence-embedding models on KLUE (`klue embed`): the engine, with no per-task code.

- `spec`: the model specs, `emb:DIR` (a local sentence-transformers model or a plain Hugging Face encoder, in
  this process) and `emb:openai:MODEL@URL` (an OpenAI-compatible `/v1/embeddings` server).
- `local`, `http`: the two backends; `base`: what a backend is.
- `cache`: every embedding asked for, on disk, keyed by the model's fingerprint, the prompt and the text.
- `frozen`: the models fitted on frozen embeddings (a logistic regression; cosine calibrated to a scale).
- `run`: one task, one spec, one seed -> predictions.jsonl and the judge's results.json.

The family that plugs it into `klue benchmark` and `klue embed` is `klue.families.embedding`.

What a task embeds and how a prediction is made is the task's own declaration (`klue.tasks.embedding`).
"""
