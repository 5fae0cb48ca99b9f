"""The checks every task model passes, on every backend (keras-hub's `run_task_test`, for this package).

`run_task_test(case, tmp_path)` takes a `TaskCase` (how to build the model on a backbone, a batch, how to
compile it) and checks, in order:

1. the model builds and its outputs have the expected shapes;
2. one `fit` step gives a finite loss and changes the trainable weights;
3. a `.keras` file reloads to a model of the same class with the same outputs;
4. `save_pretrained` / `from_pretrained` reload the same outputs (for models that write a directory);
5. under the TensorFlow backend, the exported SavedModel's `serving_token_ids` returns the same outputs;
6. the same model built under `mixed_bfloat16` trains one step with a finite loss and bfloat16 compute.
"""

import dataclasses
import os
from typing import Callable, Optional

import keras
import numpy as np

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from tests.backend_utils import to_numpy

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32)


@dataclasses.dataclass
class TaskCase:
    """How to exercise one task model.

    build: (backbone) -> model.
    batch: () -> (x, y), numpy.
    output_shapes: {output name or "logits": shape} of the model on `batch()`'s x.
    from_pretrained: (directory) -> model, or None for a model that writes no directory.
    export_task: the `export_saved_model` task name, or None for a model that is not exported.
    compile_kwargs: () -> extra `compile` arguments besides the optimizer (e.g. a loss).
    backbone_kwargs: extra `BertBackbone` arguments (e.g. output_hidden_states).
    """

    build: Callable
    batch: Callable
    output_shapes: dict
    from_pretrained: Optional[Callable] = None
    export_task: Optional[str] = None
    compile_kwargs: Callable = dict
    backbone_kwargs: dict = dataclasses.field(default_factory=dict)


def _outputs(model, x):
    """The model's outputs on `x` as {name: numpy}."""
    out = model(x, training=False)
    if isinstance(out, dict):
        return {k: to_numpy(v) for k, v in out.items() if not isinstance(v, (list, tuple))}
    return {"logits": to_numpy(out)}


def _assert_same_outputs(actual, expected, atol=1e-5, what=""):
    assert sorted(actual) == sorted(expected), what
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=atol, err_msg=f"{what}: {name}")


def _build(case, dtype=None):
    return case.build(BertBackbone(TINY, dtype=dtype, **case.backbone_kwargs))


def run_task_test(case, tmp_path):
    x, y = case.batch()

    # 1. build, output shapes
    model = _build(case)
    expected = _outputs(model, x)
    assert {k: v.shape for k, v in expected.items()} == case.output_shapes

    # 2. one fit step changes the weights, with a finite loss
    before = [np.array(to_numpy(w)) for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.Adam(1e-2), **case.compile_kwargs())
    history = model.fit(x, y, epochs=1, batch_size=len(next(iter(x.values()))), verbose=0)
    assert np.isfinite(history.history["loss"][0])
    changed = [not np.array_equal(b, to_numpy(w)) for b, w in zip(before, model.trainable_weights)]
    assert sum(changed) >= len(changed) // 2, f"only {sum(changed)} of {len(changed)} weights changed"
    expected = _outputs(model, x)

    # 3. .keras round trip
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    _assert_same_outputs(_outputs(restored, x), expected, what=".keras round trip")

    # 4. save_pretrained / from_pretrained round trip
    if case.from_pretrained is not None:
        directory = os.path.join(tmp_path, "pretrained")
        model.save_pretrained(directory)
        _assert_same_outputs(_outputs(case.from_pretrained(directory), x), expected, what="from_pretrained")

    # 5. the SavedModel computes the same outputs (TensorFlow: the export runs in this process)
    if case.export_task is not None and keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        from keras_bert_impl.export.tf_saved_model import export_saved_model

        vocab = os.path.join(tmp_path, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                            + [f"w{i}" for i in range(TINY.vocab_size - 5)]))
        labels = [f"L{i}" for i in range(expected["logits"].shape[-1])] if "logits" in expected else None
        export_dir = os.path.join(tmp_path, "saved_model")
        export_saved_model(model, vocab, export_dir, case.export_task, labels=labels)
        served = tf.saved_model.load(export_dir).signatures["serving_token_ids"](
            **{k: tf.constant(x[k], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")})
        _assert_same_outputs({k: v.numpy() for k, v in served.items() if k in expected}, expected,
                             what="SavedModel serving_token_ids")

    # 6. a bfloat16 step
    bf16 = _build(case, dtype="mixed_bfloat16")
    assert bf16.backbone.embeddings.compute_dtype == "bfloat16"
    bf16.compile(optimizer=keras.optimizers.Adam(1e-3), **case.compile_kwargs())
    history = bf16.fit(x, y, epochs=1, batch_size=len(next(iter(x.values()))), verbose=0)
    assert np.isfinite(history.history["loss"][0])
