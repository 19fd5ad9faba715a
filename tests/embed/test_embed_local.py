"""The in-process backend on tiny encoders built from a config here (seeded weights, no download): each pooling
equals the same pooling computed by hand from the encoder's hidden states, a sentence-transformers directory
keeps its own modules and prompts, and a directory whose weights are pickles is refused unopened."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from klue.embed.base import EmbeddingError
from klue.errors import DataError

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from klue.embed.local import LocalBackend
from klue.models.tiny import make_tiny_model_dir

SENTENCES = ["오늘 서울의 날씨는 맑고 따뜻하다.", "주식 시장이 크게 하락했다.", "새로운 스마트폰이 출시되었다.",
             "축구 대표팀이 결승에 진출했다.", "정부가 새로운 경제 정책을 발표했다.", "짧다"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT (2 layers, hidden 32) with seeded random weights saved as safetensors."""
    from transformers import AutoConfig, AutoModel

    directory = make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "bert", texts=SENTENCES * 5, vocab_size=300,
                                    hidden_size=32, layers=2, heads=2, intermediate_size=64)
    torch.manual_seed(0)
    AutoModel.from_config(AutoConfig.from_pretrained(directory)).save_pretrained(directory)
    return directory


def by_hand(directory: Path, texts: list[str], pooling: str) -> np.ndarray:
    """The pooled last hidden states, one text at a time (no padding), straight from transformers."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModel.from_pretrained(directory).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            states = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
            out.append({"mean": states.mean(0), "cls": states[0], "last": states[-1]}[pooling].numpy())
    return np.stack(out)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_each_pooling_equals_the_hand_computed_one(tiny_dir: Path, pooling: str) -> None:
    backend = LocalBackend(tiny_dir, pooling=None if pooling == "mean" else pooling, batch_size=4, cpu=True)
    vectors = backend.embed(SENTENCES, "")  # batched with padding: the mask must keep the pads out
    np.testing.assert_allclose(vectors, by_hand(tiny_dir, SENTENCES, pooling), atol=2e-5)
    assert backend.pooling == pooling and backend.dimension == 32
    assert backend.fingerprint.startswith("local:") and f"pooling={pooling}" in backend.fingerprint


def test_the_prompt_goes_before_every_text(tiny_dir: Path) -> None:
    backend = LocalBackend(tiny_dir, cpu=True)
    np.testing.assert_allclose(backend.embed(SENTENCES[:2], "query: "),
                               by_hand(tiny_dir, ["query: " + s for s in SENTENCES[:2]], "mean"), atol=2e-5)


def test_a_sentence_transformers_directory_keeps_its_modules_and_prompts(tiny_dir: Path, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformer = Transformer(str(tiny_dir))
    model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls"),
                                         Normalize()], prompts={"query": "질문: ", "passage": "문서: "}, device="cpu")
    model.save(str(tmp_path / "st"))
    backend = LocalBackend(tmp_path / "st", cpu=True)
    assert backend.default_prompt == "질문: " and backend.pooling == "the model's own"
    assert any("'query'" in note for note in backend.notes)
    vectors = backend.embed(SENTENCES[:3], "질문: ")
    expected = by_hand(tiny_dir, ["질문: " + s for s in SENTENCES[:3]], "cls")
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=2e-5)
    with pytest.raises(DataError, match="its own Pooling module pools"):
        LocalBackend(tmp_path / "st", pooling="mean", cpu=True)


class _Planted:
    """Unpickling this writes a file: proof that a pickle was opened."""

    def __init__(self, witness: str) -> None:
        self.witness = witness

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (Path(self.witness), "unpickled"))


def test_pickled_weights_are_never_opened(tiny_dir: Path, tmp_path: Path) -> None:
    directory = tmp_path / "pickled"
    directory.mkdir()
    for path in tiny_dir.iterdir():
        if path.suffix != ".safetensors":
            (directory / path.name).write_bytes(path.read_bytes())
    witness = tmp_path / "witness.txt"
    (directory / "pytorch_model.bin").write_bytes(pickle.dumps(_Planted(str(witness))))
    with pytest.raises(DataError, match="its weights are pickles"):
        LocalBackend(directory, cpu=True)
    assert not witness.exists()
    # the same weights as the module of a sentence-transformers model
    st = tmp_path / "st"
    (st / "0_Transformer").mkdir(parents=True)
    for path in directory.iterdir():
        (st / "0_Transformer" / path.name).write_bytes(path.read_bytes())
    (st / "modules.json").write_text('[{"idx": 0, "name": "0", "path": "0_Transformer", '
                                     '"type": "sentence_transformers.sentence_transformer.modules.Transformer"}]')
    with pytest.raises(DataError, match="its weights are pickles"):
        LocalBackend(st, cpu=True)
    assert not witness.exists()


def test_a_directory_without_weights_is_a_clear_error(tiny_dir: Path, tmp_path: Path) -> None:
    directory = tmp_path / "config-only"
    directory.mkdir()
    for path in tiny_dir.iterdir():
        if path.suffix != ".safetensors":
            (directory / path.name).write_bytes(path.read_bytes())
    with pytest.raises(EmbeddingError, match="cannot load the model"):
        LocalBackend(directory, cpu=True)
    with pytest.raises(DataError, match="--pooling takes mean, cls, last"):
        LocalBackend(tiny_dir, pooling="max", cpu=True)
