"""The pretraining side of KLUE: morpheme-aware tokenizers, masked-LM pretraining, PII pseudonymisation.

- `klue.pretraining.tokenizer`: train a WordPiece / BPE / Unigram tokenizer on morpheme-split (Kiwi),
  whitespace-split or unsplit text; the result is a plain `tokenizer.json` that `AutoTokenizer` loads.
- `klue.pretraining.mlm`: masked-LM pretraining (dynamic, optionally whole-word masking) on accelerate.
- `klue.pretraining.pii`: find personal information in Korean text and replace it with consistent pseudonyms.
- `klue.pretraining.corpus`: read corpus files; build a pretraining corpus that excludes evaluation sentences.
"""
