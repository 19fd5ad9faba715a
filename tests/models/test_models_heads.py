"""Heads over any AutoModel: summed losses, shapes, no token_type_ids for RoBERTa-type models, and a
saved fine-tuned model that loads back to the same outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from klue.errors import DataError
from klue.models.heads import IGNORE_INDEX, HeadSpec, build_head
from klue.models.loading import (
    ModelCard,
    load_encoder,
    load_finetuned,
    load_finetuned_weights,
    save_finetuned,
    uses_token_type_ids,
)
from klue.models.tiny import make_tiny_model_dir

TEXTS = ["경찰은 또 성매매 알선 자금을 관리한 박씨의 딸과 성매매 여성 김모씨 등을 입건했다.",
         "흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다.", "어떤 방에서도 흡연은 금지됩니다.",
         "무엇보다도 호스트분들이 너무 친절하셨습니다."] * 5


@pytest.fixture(scope="module", params=["bert", "roberta"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return make_tiny_model_dir(tmp_path_factory.mktemp(request.param), arch=request.param, texts=TEXTS,
                               vocab_size=300, max_len=128)


def test_a_config_only_directory_trains_from_scratch(tiny: Path) -> None:
    torch.manual_seed(0)
    first = load_encoder(tiny)
    torch.manual_seed(0)
    second = load_encoder(tiny)
    assert first.source == "from scratch (config only)"
    assert first.tokenizer.is_fast
    assert getattr(first.encoder, "pooler", None) is None  # heads read the first token themselves
    for a, b in zip(first.encoder.parameters(), second.encoder.parameters()):
        assert torch.equal(a, b)  # seeded
    assert uses_token_type_ids(first.config) is (first.config.model_type == "bert")


def test_sequence_and_token_heads_return_summed_losses(tiny: Path) -> None:
    loaded = load_encoder(tiny)
    encoded = loaded.tokenizer(TEXTS[:3], padding=True, return_tensors="pt")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]

    classifier = build_head(loaded.encoder, HeadSpec("sequence_classification", ("a", "b", "c"), 0.0)).eval()
    labels = torch.tensor([0, 2, 1])
    out = classifier(ids, mask, labels=labels)
    assert out.logits.shape == (3, 3)
    assert out.loss_sum is not None
    torch.testing.assert_close(out.loss_sum, F.cross_entropy(out.logits, labels, reduction="sum"))

    regressor = build_head(loaded.encoder, HeadSpec("sequence_regression", ("score",), 0.0)).eval()
    targets = torch.tensor([0.5, 4.0, 2.5])
    out = regressor(ids, mask, labels=targets)
    assert out.logits.shape == (3, 1)
    torch.testing.assert_close(out.loss_sum, ((out.logits.squeeze(-1) - targets) ** 2).sum())

    tagger = build_head(loaded.encoder, HeadSpec("token_classification", tuple("ABCDE"), 0.0)).eval()
    token_labels = torch.full(ids.shape, IGNORE_INDEX)
    token_labels[:, 1:4] = 2
    out = tagger(ids, mask, labels=token_labels)
    assert out.logits.shape == (*ids.shape, 5)
    keep = token_labels != IGNORE_INDEX
    torch.testing.assert_close(out.loss_sum, F.cross_entropy(out.logits[keep], token_labels[keep], reduction="sum"))
    with pytest.raises(ValueError, match="no standard head"):
        build_head(loaded.encoder, HeadSpec("biaffine", ()))


def test_sequence_head_trains_as_the_families_own_transformers_head(tiny: Path) -> None:
    """With dropout on (training mode) and the same weights and RNG, the classification head gives the logits
    of the encoder family's transformers head: BertForSequenceClassification (one dropout, after the pooler)
    for BERT, RobertaForSequenceClassification (dropout on [CLS] and after the dense layer) for RoBERTa."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    loaded = load_encoder(tiny)
    model = build_head(loaded.encoder, HeadSpec("sequence_classification", ("a", "b", "c"), 0.3)).train()
    family = loaded.config.model_type
    config = AutoConfig.from_pretrained(tiny, num_labels=3, classifier_dropout=0.3)
    reference = AutoModelForSequenceClassification.from_config(config).train()
    head_names = ({"dense": "bert.pooler.dense", "out": "classifier"} if family == "bert"
                  else {"dense": "classifier.dense", "out": "classifier.out_proj"})
    state = {}
    for name, value in model.state_dict().items():
        first, _, rest = name.partition(".")
        state[f"{family}.{rest}" if first == "encoder" else f"{head_names[first]}.{rest}"] = value
    reference.load_state_dict(state, strict=True)
    encoded = loaded.tokenizer(TEXTS[:3], padding=True, return_tensors="pt")
    inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    torch.manual_seed(5)
    ours = model(**inputs).logits
    torch.manual_seed(5)
    theirs = reference(**inputs).logits
    torch.testing.assert_close(ours, theirs)
    torch.manual_seed(6)
    assert not torch.allclose(model(**inputs).logits, ours)  # dropout was on


def test_mean_pooling_ignores_padding(tiny: Path) -> None:
    loaded = load_encoder(tiny)
    model = build_head(loaded.encoder, HeadSpec("sequence_classification", ("a", "b"), 0.0,
                                                {"pooling": "mean"})).eval()
    padded = loaded.tokenizer([TEXTS[2], TEXTS[0]], padding=True, return_tensors="pt")
    alone = loaded.tokenizer([TEXTS[2]], return_tensors="pt")
    assert padded["attention_mask"][0].sum() < padded["attention_mask"].shape[1]  # the first row is padded
    with torch.no_grad():
        batch = model(padded["input_ids"], padded["attention_mask"]).logits[0]
        single = model(alone["input_ids"], alone["attention_mask"]).logits[0]
        states = model.encode(alone["input_ids"], alone["attention_mask"], None)
        by_hand = model.out(torch.tanh(model.dense(states[0].mean(0))))
    torch.testing.assert_close(batch, single, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(single, by_hand)
    with pytest.raises(ValueError, match="unknown pooling"):
        build_head(loaded.encoder, HeadSpec("sequence_classification", ("a", "b"), 0.0, {"pooling": "max"}))


def test_saved_model_loads_back_identically(tiny: Path, tmp_path: Path) -> None:
    loaded = load_encoder(tiny)
    spec = HeadSpec("sequence_classification", ("x", "y"), 0.0)
    model = build_head(loaded.encoder, spec).eval()
    card = ModelCard("nli", "1", str(tiny), spec, 64, 16, 1, "paper/base", "local:dev-80-20")
    save_finetuned(tmp_path / "best", model, loaded.tokenizer, card)
    save_finetuned(tmp_path / "best", model, loaded.tokenizer, card)  # replace
    back = load_finetuned(tmp_path / "best")
    assert back.head == spec and back.card == card
    rebuilt = build_head(back.encoder, back.head).eval()
    back.load_weights_into(rebuilt)
    encoded = loaded.tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(model(encoded["input_ids"], encoded["attention_mask"]).logits,
                                   rebuilt(encoded["input_ids"], encoded["attention_mask"]).logits)
    # a fine-tuned directory also serves as a starting point: its encoder weights, not fresh ones
    again = load_encoder(tmp_path / "best")
    assert again.source == "klue fine-tuned"
    for a, b in zip(again.encoder.state_dict().values(), model.encoder.state_dict().values()):
        assert torch.equal(a, b)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]  # no temporary directories left
    # A run reloads best/ into the model it trained: the weights only, into a model that differs before.
    other = build_head(load_encoder(tiny).encoder, spec)
    torch.nn.init.zeros_(other.out.weight)
    load_finetuned_weights(tmp_path / "best", other)
    assert all(torch.equal(a, b) for a, b in zip(other.state_dict().values(), model.state_dict().values()))
    with pytest.raises(DataError, match="not a fine-tuned klue model"):
        load_finetuned_weights(tiny, other)


def test_trade_gold_log_probs_in_chunks_equal_the_full_distribution(tiny: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    """The value decoder scores gold tokens chunk by chunk (a 250k vocabulary does not fit at once): values and
    gradients equal those of the whole log-softmax."""
    from klue.models import trade

    loaded = load_encoder(tiny)
    head = trade.TradeHead(loaded.encoder, HeadSpec(trade.KIND, trade.GATES, 0.0, {
        "max_value_tokens": 4, "end_token_id": 2, "slot_token_ids": [[5, 6], [7]],
        "gate_mask": [[True] * len(trade.GATES)] * 2})).eval()
    vocabulary = head.word_embeddings.num_embeddings
    outputs = torch.randn(3, 5, head.hidden_size, requires_grad=True)
    gold = torch.randint(0, vocabulary, (3, 5))

    full = head.vocabulary_logits(outputs).float().log_softmax(-1).gather(-1, gold[..., None]).squeeze(-1)
    (full_grad,) = torch.autograd.grad(full.sum(), outputs)
    monkeypatch.setattr(trade, "LOGIT_BUDGET", vocabulary * 4)  # chunks of 4 of the 15 steps
    chunked = head.gold_log_vocab(outputs, gold)
    (chunked_grad,) = torch.autograd.grad(chunked.sum(), outputs)
    torch.testing.assert_close(chunked, full)
    torch.testing.assert_close(chunked_grad, full_grad)


def test_trade_generation_in_row_chunks_equals_generation_at_once(tiny: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """Greedy value decoding runs over bounded chunks of (example, slot) rows (a 250k vocabulary over every ptr
    slot of a batch does not fit at once): the tokens equal those decoded in one piece."""
    from klue.models import trade

    torch.manual_seed(0)
    loaded = load_encoder(tiny)
    head = trade.TradeHead(loaded.encoder, HeadSpec(trade.KIND, trade.GATES, 0.0, {
        "max_value_tokens": 4, "end_token_id": 2, "slot_token_ids": [[5, 6], [7], [8, 9]],
        "gate_mask": [[True] * len(trade.GATES)] * 3})).eval()
    with torch.no_grad():
        head.gate.bias[trade.PTR] = 10.0  # every slot gated ptr: 3 examples x 3 slots = 9 rows to decode
        encoded = loaded.tokenizer(TEXTS[:3], padding=True, return_tensors="pt")
        whole = head(encoded["input_ids"], encoded["attention_mask"]).value_tokens
        monkeypatch.setattr(trade, "LOGIT_BUDGET", head.word_embeddings.num_embeddings * 2)  # chunks of 2 rows
        chunked = head(encoded["input_ids"], encoded["attention_mask"]).value_tokens
    assert whole is not None and chunked is not None
    assert (whole[..., 0] >= 0).all()  # every row was decoded
    assert torch.equal(whole, chunked)


def _saved_with_pooler(tiny: Path, out: Path, model_class: str = "AutoModel", pooler: bool = True) -> Any:
    """A pretrained checkpoint of the tiny config, saved as transformers saves one (tokenizer files copied)."""
    import shutil

    import transformers

    shutil.copytree(tiny, out)
    config = transformers.AutoConfig.from_pretrained(tiny)
    kind = getattr(transformers, model_class)
    extra = {} if pooler else {"add_pooling_layer": False}
    model = kind.from_config(config, **extra) if model_class == "AutoModel" else kind(config)
    model.save_pretrained(out)
    return model


@pytest.mark.parametrize("saved_as", ["AutoModel", "BertForPreTraining"])
def test_a_bert_checkpoint_pooler_starts_the_sequence_head(tiny: Path, tmp_path: Path, saved_as: str) -> None:
    """KLUE-BERT holds pooler weights that BertForSequenceClassification fine-tunes through: the head's dense
    layer starts from them; RoBERTa's head (and mean pooling) starts fresh, as transformers' does."""
    from typing import cast

    if saved_as == "BertForPreTraining" and "roberta" in tiny.name:
        pytest.skip("BertForPreTraining is a BERT class")
    torch.manual_seed(11)
    saved = _saved_with_pooler(tiny, tmp_path / "ckpt", saved_as)
    pooler = cast(Any, saved).bert.pooler if saved_as == "BertForPreTraining" else cast(Any, saved).pooler
    loaded = load_encoder(tmp_path / "ckpt")
    assert loaded.source == "pretrained" and getattr(loaded.encoder, "pooler", None) is None
    spec = HeadSpec("sequence_classification", ("a", "b"), 0.0)
    head = build_head(loaded.encoder, spec)
    fresh = head.dense.weight.detach().clone()
    if loaded.config.model_type == "roberta":  # RobertaForSequenceClassification never reads the pooler
        assert loaded.pooler is None
        return
    assert loaded.pooler is not None
    torch.testing.assert_close(loaded.pooler["weight"], pooler.dense.weight.detach(), rtol=0, atol=0)
    assert head.start_from_pooler(loaded.pooler)
    torch.testing.assert_close(head.dense.weight.detach(), pooler.dense.weight.detach(), rtol=0, atol=0)
    torch.testing.assert_close(head.dense.bias.detach(), pooler.dense.bias.detach(), rtol=0, atol=0)
    assert not torch.equal(head.dense.weight, fresh)
    mean = build_head(loaded.encoder, HeadSpec("sequence_classification", ("a", "b"), 0.0, {"pooling": "mean"}))
    assert not mean.start_from_pooler(loaded.pooler)  # the pooler was trained on [CLS], not on a mean
    assert not build_head(loaded.encoder, HeadSpec("token_classification", ("a",))).start_from_pooler(loaded.pooler)


def test_a_bert_checkpoint_without_a_pooler_keeps_the_fresh_head(tiny: Path, tmp_path: Path) -> None:
    _saved_with_pooler(tiny, tmp_path / "ckpt", pooler=False)  # as multilingual-e5 is saved
    assert load_encoder(tmp_path / "ckpt").pooler is None
