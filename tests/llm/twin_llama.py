"""One tiny random-weight Llama in two formats, for the in-process vs HTTP agreement test (not a test module):
a Hugging Face model directory (`hf:DIR`) and the GGUF that llama.cpp's own converter makes of it, which a
llama-cpp-python server serves (`openai:MODEL@URL`).

The converter is `convert_hf_to_gguf.py` from the llama-cpp-python source distribution (its
`vendor/llama.cpp/`, with the `conversion/` and `gguf-py/` beside it): found through the environment variable
KLUE_LLAMA_CPP_CONVERTER (the script's path) or in the user's cache, where `fetch_converter` puts it. It
runs with this environment's torch and transformers, its own gguf-py, and needs `sentencepiece` installed
even for a model without `tokenizer.model` (it imports the package before looking for the file).

The tokenizer is Llama's layout (a BPE with byte fallback, Metaspace "▁" with a dummy prefix, LlamaTokenizer
of transformers) over a vocabulary built here from texts. Why not a trained BPE: the converter reads a
`tokenizer.json` through gguf-py's LlamaHfVocab, which gives every token the same score (-1000), and
llama.cpp's SentencePiece tokenizer then merges the leftmost pair first instead of by merge rank. So the
vocabulary is made so that the order of merges cannot matter: single characters, plus for frequent words
the chain "▁w1", "▁w1w2", ... (each piece is the one before it plus one character). A merge can then only
extend a chain at a word start, and both tokenizers give the same tokens; the test checks that on its texts.
(A Unigram tokenizer.json is not an option: the converter takes only a BPE with byte fallback this way, and
llama.cpp's tokenizer for "llama" models merges by score, which is not Unigram's Viterbi segmentation.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"  # the version whose server the tests run (../shared/wheels)
CONVERTER_ENV = "KLUE_LLAMA_CPP_CONVERTER"
SPACE = "▁"  # SentencePiece's word-start mark
SPECIALS = ("<unk>", "<s>", "</s>")
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant:{% endif %}"
)


def converter_cache() -> Path:
    """Beside klue's data cache (~/.cache/klue/ on Linux): ~/.cache/klue/llama.cpp-VERSION/."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("klue", appauthor=False)) / f"llama.cpp-{LLAMA_CPP_PYTHON}"


def find_converter() -> Path | None:
    """KLUE_LLAMA_CPP_CONVERTER if set (it must exist), else the cached copy, else None."""
    named = os.environ.get(CONVERTER_ENV)
    if named:
        return Path(named) if Path(named).is_file() else None
    cached = converter_cache() / "convert_hf_to_gguf.py"
    return cached if cached.is_file() else None


def fetch_converter(target: Path | None = None) -> Path:
    """Download llama-cpp-python's source distribution with pip and keep only the converter, its `conversion`
    package, gguf-py and the license (about 2 MB of the 77 MB archive) under `target` (the cache by default).
    `python tests/llm/twin_llama.py` runs this when the cache has no copy (.ci/run does)."""
    target = target or converter_cache()
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", scratch], check=True)
        archive = next(Path(scratch).glob("llama_cpp_python-*.tar.gz"))
        prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
        wanted = ("convert_hf_to_gguf.py", "LICENSE", "conversion/", "gguf-py/")
        staging = Path(scratch) / "kept"
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers()
                       if m.name.startswith(prefix) and m.name[len(prefix):].startswith(wanted) and (m.isfile() or m.isdir())]
            for member in members:
                member.name = member.name[len(prefix):]
            tar.extractall(staging, members=members, filter="data")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, target)
    return target / "convert_hf_to_gguf.py"


def build_vocabulary(texts: Iterable[str], *, n_chars: int = 900, n_words: int = 200) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Llama's id layout (<unk>, <s>, </s>, the 256 byte tokens) then the characters seen `n_chars` most
    often, then the "▁"-anchored chains of the `n_words` most frequent words (of 2+ characters, all of them
    kept characters), with their merges in chain order. Ties are broken by the text, so it repeats."""
    texts = list(texts)
    chars = Counter(c for text in texts for c in text.replace(" ", SPACE))
    kept = [c for c, _ in sorted(chars.items(), key=lambda item: (-item[1], item[0]))[:n_chars]]
    if SPACE not in kept:
        kept.append(SPACE)
    vocab: dict[str, int] = {token: i for i, token in enumerate(SPECIALS)}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for char in kept:
        vocab.setdefault(char, len(vocab))
    kept_set = set(kept)
    words = Counter(word for text in texts for word in text.split() if len(word) >= 2 and set(word) <= kept_set)
    merges: list[tuple[str, str]] = []
    for word, _ in sorted(words.items(), key=lambda item: (-item[1], item[0]))[:n_words]:
        piece = SPACE
        for char in word:
            if piece + char not in vocab:
                vocab[piece + char] = len(vocab)
                merges.append((piece, char))
            piece += char
    return vocab, merges


def write_hf_llama(out: Path, texts: Iterable[str], *, seed: int = 0, width: int = 64, layers: int = 2, heads: int = 4,
                   kv_heads: int = 2, context: int = 2048) -> Path:
    """A LlamaForCausalLM from a LlamaConfig with seeded random weights (float32), and its tokenizer, saved
    to `out` as a model directory (safetensors, tokenizer.json); nothing from the hub."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaTokenizerFast

    vocab, merges = build_vocabulary(texts)
    tokenizer = LlamaTokenizerFast(vocab=vocab, merges=merges, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   add_bos_token=True, add_eos_token=False, model_max_length=context)
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=width, intermediate_size=width * 2,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=context, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                         tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # norms away from 1, so a mistake in their conversion shows
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 1.5)
            else:
                parameter.normal_(0.0, 0.3)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def convert(hf_dir: Path, gguf_path: Path, converter: Path) -> Path:
    """`convert_hf_to_gguf.py HF_DIR --outtype f32` in a subprocess, with the converter's own gguf-py."""
    run = subprocess.run([sys.executable, str(converter), str(hf_dir), "--outfile", str(gguf_path), "--outtype", "f32"],
                         capture_output=True, text=True, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if run.returncode != 0 or not gguf_path.is_file():
        raise RuntimeError(f"{converter} failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return gguf_path


if __name__ == "__main__":
    # `python tests/llm/twin_llama.py [DIR]`: fetch the converter into DIR (default: the cache) unless there
    if len(sys.argv) > 1:
        print(fetch_converter(Path(sys.argv[1])))
    else:
        print(find_converter() or fetch_converter())
