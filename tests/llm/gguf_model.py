"""A tiny llama-architecture GGUF written at test time, so a real llama-cpp-python server can be started on
127.0.0.1 without downloading a model (docs: /work/shared/docs/LLM.md, "A tiny model file").

The weights are random but seeded, so scores repeat across runs; the vocabulary is SentencePiece-style
("llama" tokenizer model) with the 256 byte tokens, so any Korean text tokenizes (by byte fallback), and a
few whole-word pieces, so some tokens span several characters (needed to provoke a token straddling the
context/continuation boundary).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Whole pieces beside the byte tokens; "▁" is SentencePiece's word-start mark. "ab" lets "a" + "b" merge
# into one token across a boundary; the Hangul pieces give multi-byte tokens with non-empty text.
PIECES: tuple[str, ...] = (
    "▁", "a", "b", "c", "ab", "▁a", "▁b", "▁ab", "▁답", "답", "▁긍정", "▁부정", "▁중립", "긍정", "부정",
    "▁문장", "▁한국어", "한국어", ":", "▁:", ".", "\n", "▁the", "▁yes", "▁no", "yes", "no", "▁질문", "▁예",
)
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant:{% endif %}"
)


def _vocabulary() -> tuple[list[bytes], list[float], list[int]]:
    import gguf

    tokens: list[bytes] = [b"<unk>", b"<s>", b"</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>".encode())
        types.append(gguf.TokenType.BYTE)
    for piece in PIECES:
        tokens.append(piece.encode("utf-8"))
        types.append(gguf.TokenType.NORMAL)
    # SentencePiece merges by score: longer pieces score higher so "▁한국어" wins over its bytes.
    scores = [0.0] * 259 + [float(len(p)) for p in PIECES]
    return tokens, scores, [int(t) for t in types]


def write_tiny_llama(path: Path, *, seed: int = 0, width: int = 64, layers: int = 2, heads: int = 4,
                     context: int = 512) -> Path:
    """Write the model to `path` (about half a megabyte) and return it."""
    import gguf

    tokens, scores, types = _vocabulary()
    vocab = len(tokens)
    ffn = width * 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(width // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        # numpy shapes are (rows, cols) = the reverse of ggml's (ne0, ne1).
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    writer.add_tensor("token_embd.weight", weight(vocab, width))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    writer.add_tensor("output.weight", weight(vocab, width))
    for block in range(layers):
        prefix = f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", np.ones(width, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{prefix}.{name}.weight", weight(width, width))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weight(ffn, width))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weight(ffn, width))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weight(width, ffn))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
