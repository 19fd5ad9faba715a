"""Fine-tuning of any Hugging Face encoder on the KLUE tasks (the accelerate-based engine).

`klue.training.run(task, model, protocol_data, seed, out_dir, overrides, mode)` fine-tunes and returns the
judge's Results (a producer, docs/architecture.md); importing
this package stays light (torch is imported when a run starts).
"""

from klue.training.run import run

__all__ = ["run"]
