"""Task-free plumbing, the lowest floor of klue: text and JSON reading with file:line problems, typed JSON
field access, TSV and CoNLL-U rows, atomic writes, hashing, stable hash splits, data location, the verified
downloader, provenance, and the column helpers for Hugging Face `datasets` copies.

Nothing here knows a KLUE task (docs/architecture.md, "Floors").
"""
