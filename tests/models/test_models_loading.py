"""Loading a model directory never executes code from it: a planted pickle (`pytorch_model.bin` whose
unpickling would write a file) and a config naming its own Python (`auto_map`) are refused with one clear
error before anything is unpickled or imported, by the encoder loader (`klue train`, `klue predict`) and the
in-process LLM backend (`klue llm hf:DIR`); safetensors directories load as before."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="model loading needs torch: pip install 'klue[train]'")

from klue.errors import DataError
from klue.models.loading import load_encoder
from klue.models.tiny import make_tiny_llama_dir, make_tiny_model_dir

TEXTS = ["안녕하세요 반갑습니다", "오늘 날씨가 좋다", "경찰은 또 자금을 관리했다"] * 10


class _Planted:
    """Unpickling this runs `open(marker, "w")`: what a malicious checkpoint does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def _plant(directory: Path, marker: Path) -> None:
    torch.save({"weight": _Planted(marker)}, directory / "pytorch_model.bin")  # torch's own format, as a checkpoint


@pytest.fixture
def unguarded_torch_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.load as torch < 2.6 (which klue accepts) did it: unpickling anything, no weights_only guard."""
    real = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = False
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "load", load)


def test_a_planted_pickle_in_an_encoder_directory_never_runs(tmp_path: Path, unguarded_torch_load: None) -> None:
    model = make_tiny_model_dir(tmp_path / "enc", texts=TEXTS, vocab_size=120, hidden_size=32, layers=1,
                                intermediate_size=64)
    marker = tmp_path / "code-ran"
    _plant(model, marker)
    with pytest.raises(DataError, match=r"pickles \(pytorch_model\.bin\), which can run code when loaded"):
        load_encoder(model)
    assert not marker.exists()


def test_a_planted_pickle_in_an_llm_directory_never_runs(tmp_path: Path, unguarded_torch_load: None) -> None:
    from klue.llm.backends.hf import HfBackend

    model = make_tiny_llama_dir(tmp_path / "llm", TEXTS, vocab_size=300, hidden_size=32, layers=1, max_len=128)
    for weights in model.glob("*.safetensors"):
        weights.unlink()
    marker = tmp_path / "code-ran"
    _plant(model, marker)
    with pytest.raises(DataError, match="which can run code when loaded"):
        HfBackend(str(model), cpu=True)
    assert not marker.exists()


def test_a_model_that_needs_its_own_code_is_refused(tmp_path: Path) -> None:
    model = make_tiny_model_dir(tmp_path / "enc", texts=TEXTS, vocab_size=120, hidden_size=32, layers=1,
                                intermediate_size=64)
    marker = tmp_path / "code-ran"
    (model / "evil_model.py").write_text(f"open({str(marker)!r}, 'w')\n", encoding="utf-8")
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config |= {"model_type": "evil-net", "architectures": ["EvilModel"],
               "auto_map": {"AutoConfig": "evil_model.EvilConfig", "AutoModel": "evil_model.EvilModel"}}
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(DataError, match=r"without running code the model ships.*trust_remote_code is off"):
        load_encoder(model)
    assert not marker.exists()


def test_safetensors_directories_still_load(tmp_path: Path) -> None:
    from klue.models.loading import check_loads_without_code

    model = make_tiny_model_dir(tmp_path / "enc", texts=TEXTS, vocab_size=120, hidden_size=32, layers=1,
                                intermediate_size=64)
    fresh = load_encoder(model)  # config only: trained from scratch
    fresh.encoder.save_pretrained(str(model))  # model.safetensors beside a stray pickle is fine
    (model / "training_args.bin").write_bytes(pickle.dumps({"lr": 1e-3}))
    check_loads_without_code(model)
    assert load_encoder(model).source == "pretrained"
    assert os.listdir(model)  # nothing removed
