"""The interface between a task and a model: records -> features, the head, model outputs -> predictions.

A task implements it in its own package (`klue/tasks/<name>/adapter.py`, declared in the task as a lazy
reference such as `".adapter:make_adapter"`); the training engine (`klue.training`) only calls the methods
below, so a task with a custom head (entity markers, biaffine arcs, spans, a generator), a custom collate
(extra tensors) or several outputs per feature plugs in by overriding them. It lives here, below the tasks,
because it is about models and tensors and knows no task (docs/architecture.md).

Predictions are built through the task's own `parse_prediction` from prediction-file JSON objects
(docs/tasks.md, "Prediction files"), and gold labels are read from
`prediction_to_json(gold_prediction(record))`: adapters depend on the prediction file schema, not on the
field names of the task's dataclasses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import torch
from torch import nn

from klue.errors import DataError, ProblemLog
from klue.io.locate import DataRoots
from klue.models.collate import collate_features
from klue.models.features import Feature, FeaturizeContext
from klue.models.heads import HeadOutput, HeadSpec, build_head


class TaskView(Protocol):
    """What an adapter reads of its task (a `klue.tasks.base.Task` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    def guid(self, record: Any) -> str: ...
    def gold_prediction(self, record: Any) -> Any: ...
    def prediction_to_json(self, prediction: Any) -> dict[str, Any]: ...
    def parse_prediction(self, obj: Any, log: ProblemLog, location: str) -> Any: ...
    def evaluate(self, golds: Sequence[Any], preds: Sequence[Any], mode: Any) -> Any: ...


class Adapter(ABC):
    """What the engine needs from a task. Subclasses implement `head_spec`, `featurize` and `decode`."""

    def __init__(self, task: TaskView) -> None:
        self.task = task

    def attach_data(self, roots: DataRoots | None) -> None:
        """Called first when training, with the data roots the records came from (None when they came
        from no root): adapters that need a task resource beside the records (the WoS ontology) read it."""

    def prepare(self, tokenizer: Any, train_records: Sequence[Any] | None) -> None:
        """Called once before `head_spec` and `featurize`, with the training records (None when a saved
        model predicts): adapters that add tokens (entity markers) or read a label set off the training
        data do it here. The caller then resizes the encoder's embeddings to the tokenizer."""

    @abstractmethod
    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        """The head this task trains (kind, label names in output order, `head.<name>` options checked)."""

    def build_model(self, encoder: nn.Module, spec: HeadSpec) -> nn.Module:
        """Encoder + head; override for a custom head. Called again with the saved spec at load time."""
        return build_head(encoder, spec)

    @abstractmethod
    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        """Features for `records` (labels included when the records carry gold; never truncating
        silently: a task whose inputs may exceed max_len windows them or says what it cut)."""

    def collate(self, features: Sequence[Feature], ctx: FeaturizeContext, with_labels: bool,
                pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
        """Model inputs for one batch; the keys are passed to the model as keyword arguments."""
        return collate_features(features, ctx.tokenizer.pad_token_id, with_labels, pad_to_multiple_of)

    def to_host(self, output: HeadOutput, batch: Mapping[str, torch.Tensor],
                features: Sequence[Feature]) -> list[Any]:
        """One host-side (numpy) output per feature of the batch; they cross processes by pickling, so
        keep them small (e.g. argmax ids rather than full logits where the decoder needs no more)."""
        logits = output.logits.float().cpu().numpy()
        if logits.ndim == 3:  # per-token outputs: drop the padding
            return [logits[i, : len(f)] for i, f in enumerate(features)]
        return list(logits)

    @abstractmethod
    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        """One prediction (the task's prediction type) per record, in record order."""

    # Helpers for subclasses ------------------------------------------------------------------------
    def gold_json(self, record: Any) -> dict[str, Any]:
        return self.task.prediction_to_json(self.task.gold_prediction(record))

    @staticmethod
    def has_gold(record: Any) -> bool:
        """False for a record read for prediction without its gold (`klue predict` on new data): its features
        carry no label (inference collates without labels), and nothing may train on it."""
        return bool(getattr(record, "labelled", True))

    def prediction(self, obj: dict[str, Any]) -> Any:
        """A prediction object from its prediction-file JSON form, checked by the task's own parser."""
        log = ProblemLog(f"{self.task.name} decoder")
        parsed = self.task.parse_prediction(obj, log, obj.get("guid", ""))
        log.raise_if_errors()
        if parsed is None:
            raise DataError(f"{self.task.name}: the decoder made an invalid prediction: {obj}")
        return parsed


def check_head_options(task_name: str, options: Mapping[str, Any],
                       known: Mapping[str, tuple[Any, ...]]) -> dict[str, Any]:
    """`options` validated against `known` (name -> allowed values, the first the default; or
    `(float, default)` for a number); the full set."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        allowed = ", ".join(f"head.{k}" for k in known) or "none"
        raise DataError(f"{task_name}: unknown head option(s) {', '.join('head.' + k for k in unknown)} "
                        f"(this task knows: {allowed})")
    chosen = {}
    for name, values in known.items():
        if values and values[0] is float:
            try:
                chosen[name] = float(options.get(name, values[1]))
            except (TypeError, ValueError):
                raise DataError(f"{task_name}: head.{name}={options[name]!r} is not a number") from None
            continue
        value = options.get(name, values[0])
        if value not in values:
            raise DataError(f"{task_name}: head.{name}={value!r}; expected one of {', '.join(map(str, values))}")
        chosen[name] = value
    return chosen
