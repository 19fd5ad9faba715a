"""The pretraining side of KLUE: morpheme-aware tokenizers, masked-LM pretraining, PII pseudonymisation.

- `klue.pretraining.tokenizer`: train a WordPiece / BPE / Unigram tokenizer on morpheme-split (Kiwi),
  whitespace-split or unsplit text; the result is a plain `tokenizer.json` that `AutoTokenizer` loads.
- `klue.pretraining.mlm`: masked-LM pretraining (dynamic, optionally whole-word masking) on accelerate.
- `klue.pretraining.pii`: find personal information in Korean text and replace it with consistent pseudonyms.
- `klue.pretraining.corpus`: stream corpus files (text, JSONL, gzip/zstd, shard directories, `datasets`);
  a seeded reservoir sample; build a pretraining corpus that excludes evaluation sentences.
- `klue.pretraining.packing`: tokenize texts and pack them into masked-LM blocks, streamed.
- `klue.pretraining.shards`: `klue pretrain prepare`: token shards on disk (parallel, resumable, the same bytes
  whatever the worker count), read by memory map for `klue pretrain mlm --data`.
- `klue.pretraining.pii_parallel`: pseudonymising files (`pseudonymise_files`), streamed over worker processes
  or Ray tasks, in order.
"""
