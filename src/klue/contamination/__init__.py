"""Contamination: the overlap of a training corpus with the tasks' examples (n-grams over streamed corpora,
in processes or on Ray) and model-based membership scores (docs/contamination.md)."""
