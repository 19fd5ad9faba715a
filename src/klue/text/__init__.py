"""Korean text helpers shared by task baselines, adapters and pretraining: the one Kiwi analyser and the
morpheme and character features built on it. Task-free (docs/architecture.md, "Floors")."""
