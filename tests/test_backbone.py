import re

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from tests.backend_utils import compiled_gradient_hlo, inference, to_numpy, trainable_gradients

TINY = BertConfig(
    vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32,
    max_position_embeddings=32,
)


def _inputs(batch=2, seq=6, seed=0):
    rng = np.random.RandomState(seed)
    mask = np.ones((batch, seq), "int32")
    mask[1, seq - 2 :] = 0
    return {
        "token_ids": rng.randint(1, TINY.vocab_size, size=(batch, seq)).astype("int32") * mask,
        "segment_ids": (np.arange(seq)[None] >= seq // 2).astype("int32").repeat(batch, 0),
        "padding_mask": mask,
    }


def _parameter_count(preset):
    # Variables created in a StatelessScope that does not initialize them have their shapes and no values
    # (Keras defers the initializer): counting BERT-large takes under a second instead of drawing 335M numbers.
    # Keras keeps them in its global list of variables to initialize, which the exit of any later
    # StatelessScope (every symbolic call) initializes, drawing BERT-base's and BERT-large's weights in some
    # later test: the session is cleared of them.
    with keras.StatelessScope(initialize_variables=False):
        count = BertBackbone(BertConfig.preset(preset)).count_params()
    keras.backend.clear_session(free_memory=False)
    return count


def test_counting_parameters_leaves_no_variable_for_a_later_scope_to_initialize(monkeypatch):
    drawn = []
    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__",
                        lambda self, shape, dtype=None: drawn.append(shape) or keras.ops.zeros(shape, dtype))
    _parameter_count("bert_base")
    assert drawn == []  # counted without drawing
    with keras.StatelessScope():  # its exit initializes the variables Keras deferred
        pass
    assert drawn == []


def test_bert_base_has_exactly_109_482_240_parameters():
    assert _parameter_count("bert_base") == 109_482_240


def test_bert_large_has_exactly_335_141_888_parameters():
    # 335,043,584 in some tables forgets the 24 intermediate biases (24 * 4096).
    assert _parameter_count("bert_large") == 335_141_888


def test_outputs_and_hidden_states_have_the_documented_shapes():
    model = BertBackbone(TINY, output_hidden_states=True)
    outputs = model(_inputs())
    assert tuple(outputs["sequence_output"].shape) == (2, 6, 16)
    assert tuple(outputs["pooled_output"].shape) == (2, 16)
    hidden = outputs["hidden_states"]
    assert len(hidden) == TINY.num_hidden_layers + 1
    np.testing.assert_allclose(to_numpy(hidden[-1]), to_numpy(outputs["sequence_output"]), atol=0)
    embeddings = model.embeddings(_inputs()["token_ids"], _inputs()["segment_ids"])
    np.testing.assert_allclose(to_numpy(hidden[0]), to_numpy(embeddings), atol=1e-6)


def test_pooled_output_is_tanh_dense_of_the_cls_position():
    model = BertBackbone(TINY)
    outputs = model(_inputs())
    cls = to_numpy(outputs["sequence_output"])[:, 0]
    expected = np.tanh(cls @ to_numpy(model.pooler.kernel) + to_numpy(model.pooler.bias))
    np.testing.assert_allclose(to_numpy(outputs["pooled_output"]), expected, atol=1e-5)


def test_cls_only_pooled_output_equals_the_full_pooled_output():
    """`pooled_output` skips the last layer's non-[CLS] rows; the [CLS] summary is unchanged, with padding."""
    model = BertBackbone(TINY)
    inputs = _inputs()
    inputs["padding_mask"][1, 5:] = 0
    np.testing.assert_allclose(
        to_numpy(model.pooled_output(inputs)), to_numpy(model(inputs)["pooled_output"]), atol=1e-5
    )
    # Built symbolically it shares the backbone's weights, and its last block runs one position only.
    symbolic = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in inputs}
    pooled_model = keras.Model(symbolic, model.pooled_output(symbolic))
    assert len(pooled_model.weights) == len(model.weights)
    last = model.encoder_blocks[-1]
    assert tuple(last._inbound_nodes[-1].output_tensors[0].shape) == (None, 1, TINY.hidden_size)
    np.testing.assert_allclose(
        to_numpy(pooled_model(inputs)), to_numpy(model(inputs)["pooled_output"]), atol=1e-5
    )


def test_the_last_blocks_two_parts_equal_one_call_of_the_block_over_every_row():
    """The backbone runs its last block as the [CLS] row and the other rows (on torch outside training: one
    call, sliced); with padding and with causal attention, in inference and in training without dropout,
    the outputs equal one call over the whole sequence, and the pooler reads that call's [CLS] row."""
    from keras_bert_impl.layers.attention import attention_bias_from_padding_mask, causal_attention_bias

    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    for direction in ("bidirectional", "causal"):
        model = BertBackbone(BertConfig.from_dict({**TINY.to_dict(), **no_dropout, "attention_direction": direction}))
        inputs = _inputs()
        inputs["padding_mask"][1, 5:] = 0
        bias = (causal_attention_bias if direction == "causal" else attention_bias_from_padding_mask)(
            inputs["padding_mask"])
        x = model.embeddings(inputs["token_ids"], inputs["segment_ids"])
        for block in model.encoder_blocks:
            x = block(x, bias)
        for training in (False, True):
            outputs = model(inputs, training=training)
            np.testing.assert_allclose(to_numpy(outputs["sequence_output"]), to_numpy(x), atol=1e-6)
            np.testing.assert_allclose(to_numpy(outputs["pooled_output"]), to_numpy(model.pooler(x[:, 0])),
                                       atol=1e-6)


def _rows_through_last_feed_forward(model, run):
    """The number of rows the last block's feed-forward computes while `run()` executes eagerly."""
    dense = model.encoder_blocks[-1].intermediate_dense
    rows, call = [], dense.call
    dense.call = lambda x, *args, **kwargs: rows.append(int(np.prod(x.shape[:-1]))) or call(x, *args, **kwargs)
    try:
        run()
    finally:
        del dense.call
    return sum(rows)


def _rows_through_last_feed_forward_backward(model, loss):
    """The number of rows of the last block's feed-forward output that torch's backward pass of `loss()`
    (computed in training) reaches."""
    dense = model.encoder_blocks[-1].intermediate_dense
    rows, call = [], dense.call

    def counting_call(x, *args, **kwargs):
        y = call(x, *args, **kwargs)
        y.register_hook(lambda grad: rows.append(int(np.prod(grad.shape[:-1]))))
        return y

    dense.call = counting_call
    try:
        loss().backward()
    finally:
        del dense.call
    return sum(rows)


def test_a_user_head_reading_only_pooled_output_skips_the_last_blocks_other_rows_when_compiled():
    """A user's functional head on `pooled_output` compiles (XLA on JAX and TensorFlow, forward and backward)
    to exactly the dots of the explicit `pooled_output()` graph: XLA drops the last block's non-[CLS] rows.
    One on `sequence_output` keeps them. Torch runs eagerly: every row is computed forward, as the eager
    count shows on every backend, and `pooled_output()` is the path that skips them there; torch's backward
    pass in training reaches only the [CLS] rows of a pooled head, as it does for `pooled_output()`."""
    model = BertBackbone(TINY)
    symbolic = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in ("token_ids", "segment_ids",
                                                                                 "padding_mask")}
    heads = {
        "pooled head": keras.Model(symbolic, keras.layers.Dense(2)(model(symbolic)["pooled_output"])),
        "explicit": keras.Model(symbolic, keras.layers.Dense(2)(model.pooled_output(symbolic))),
        "token head": keras.Model(symbolic, keras.layers.Dense(2)(model(symbolic)["sequence_output"])),
    }
    inputs = _inputs(batch=2, seq=6)
    eager_rows = {name: _rows_through_last_feed_forward(model, lambda: head(inputs)) for name, head in heads.items()}
    assert eager_rows == {"pooled head": 2 * 6, "explicit": 2, "token head": 2 * 6}
    if keras.backend.backend() == "torch":
        backward_rows = {name: _rows_through_last_feed_forward_backward(
            model, lambda: keras.ops.sum(head(inputs, training=True))) for name, head in heads.items()}
        assert backward_rows == {"pooled head": 2, "explicit": 2, "token head": 2 + 2 * 5}
        return
    dots = {name: sorted(re.findall(r"= (\S+) dot\(", compiled_gradient_hlo(head, inputs)))
            for name, head in heads.items()}
    assert dots["pooled head"] == dots["explicit"]
    # The other rows: 2 x 5 of them through the last block's projections and feed-forward.
    assert not any(shape.startswith("f32[10,") for shape in dots["pooled head"])
    assert sum(shape.startswith("f32[10,") for shape in dots["token head"]) >= 4


@pytest.mark.tensorflow
def test_tensorflow_backward_of_the_last_blocks_parts_concatenates_and_pads_nothing():
    """On TensorFlow the last block's two parts are cut from its input with one split, for the queries and
    for the residuals (`backends.split_rows`): a token head's gradient concatenates the parts'
    gradients, with no `StridedSliceGrad` (a zero-padded [batch, seq, H] copy per slice)."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("TensorFlow's gradient graph")
    import tensorflow as tf

    model = BertBackbone(TINY)
    inputs = {k: tf.constant(v) for k, v in _inputs().items()}

    @tf.function
    def gradients(batch):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(batch, training=True)["sequence_output"])
        return tape.gradient(loss, model.trainable_variables)

    types = [op.type for op in gradients.get_concrete_function(inputs).graph.get_operations()]
    assert "SplitV" in types and "ConcatV2" in types
    assert "StridedSliceGrad" not in types


def test_padding_does_not_change_outputs_at_real_positions():
    model = BertBackbone(TINY)
    short = {k: v[:1, :4] for k, v in _inputs().items()}
    padded = {k: np.concatenate([v, np.zeros((1, 5), "int32")], axis=1) for k, v in short.items()}
    padded["token_ids"][0, 4:] = [5, 9, 13, 2, 7]  # garbage under the padding
    a = inference(model, short)["sequence_output"]
    b = inference(model, padded)["sequence_output"][:, :4]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_a_fully_padded_row_gives_finite_outputs():
    model = BertBackbone(TINY)
    inputs = _inputs()
    inputs["padding_mask"][0] = 0
    outputs = model(inputs)
    assert np.isfinite(to_numpy(outputs["sequence_output"])).all()
    assert np.isfinite(to_numpy(outputs["pooled_output"])).all()


def test_any_length_up_to_max_positions_works_and_longer_is_refused():
    model = BertBackbone(TINY)
    for seq in (1, 7, TINY.max_position_embeddings):
        inputs = {k: np.ones((1, seq), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
        assert inference(model, inputs)["sequence_output"].shape == (1, seq, 16)
    too_long = {k: np.ones((1, 33), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(ValueError, match="33 exceeds max_position_embeddings=32"):
        model(too_long)


def test_every_trainable_weight_gets_a_nonzero_gradient():
    model = BertBackbone(TINY)
    inputs = _inputs()

    rng = np.random.RandomState(1)
    seq_weights = keras.ops.convert_to_tensor(rng.normal(size=(2, 6, 16)).astype("float32"))
    pooled_weights = keras.ops.convert_to_tensor(rng.normal(size=(2, 16)).astype("float32"))

    def loss_fn(outputs):  # random projections: LayerNorm's scale invariance cannot hide a gradient
        return keras.ops.sum(outputs["sequence_output"] * seq_weights) + keras.ops.sum(
            outputs["pooled_output"] * pooled_weights
        )

    grads = trainable_gradients(model, inputs, loss_fn)
    assert len(grads) == len(model.trainable_variables) == 5 + 2 * 16 + 2  # embeddings, 2 blocks, pooler
    for variable, grad in zip(model.trainable_variables, grads):
        assert grad is not None and np.abs(grad).max() > 0, variable.path


def test_dropout_is_active_only_in_training():
    model = BertBackbone(TINY)
    inputs = _inputs()
    inference = to_numpy(model(inputs)["sequence_output"])
    np.testing.assert_allclose(inference, to_numpy(model(inputs, training=False)["sequence_output"]), atol=1e-6)
    assert np.abs(to_numpy(model(inputs, training=True)["sequence_output"]) - inference).max() > 1e-3


def test_config_round_trip_and_keras_file_round_trip(tmp_path):
    model = BertBackbone(TINY, output_hidden_states=True)
    restored = BertBackbone.from_config(model.get_config())
    assert restored.config == TINY and restored.output_hidden_states
    assert restored.get_config() == model.get_config()
    path = str(tmp_path / "backbone.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertBackbone)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(to_numpy(loaded(_inputs())[key]), to_numpy(model(_inputs())[key]), atol=1e-6)


def test_predict_and_fit_run_through_keras():
    model = BertBackbone(TINY)
    inputs = _inputs(batch=4)
    assert model.predict(inputs, batch_size=2, verbose=0)["pooled_output"].shape == (4, 16)
    pooled = keras.layers.Dense(2)(model.output["pooled_output"])
    classifier = keras.Model(model.input, pooled)
    classifier.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = classifier.fit(inputs, np.array([0, 1, 0, 1]), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_mixed_bfloat16_policy_keeps_float32_variables():
    model = BertBackbone(TINY, dtype="mixed_bfloat16")
    assert all(v.dtype == "float32" for v in model.weights)
    outputs = model(_inputs())
    assert keras.backend.standardize_dtype(outputs["sequence_output"].dtype) == "bfloat16"


def test_a_non_config_argument_is_refused():
    with pytest.raises(TypeError, match="expects a BertConfig"):
        BertBackbone("bert_base")


def test_summary_shows_the_backbones_own_shapes_after_a_classifier_reuses_its_last_block_at_cls_only():
    from keras_bert_impl.models.classifier import BertClassifier

    backbone = BertBackbone(BertConfig.preset("bert_tiny"))
    classifier = BertClassifier(backbone, num_classes=2)

    def last_block_shape(model):
        lines = []
        model.summary(line_length=120, print_fn=lambda line, **_: lines.append(line))
        rows = "\n".join(lines).splitlines()
        at = next(i for i, line in enumerate(rows) if "transformer_layer_1" in line)
        # The output-shape column of the block's row and of its continuation row.
        return " ".join(row.split("│")[2].strip() for row in rows[at: at + 2]).strip()

    # The backbone's graph: the [CLS] row and the other rows as two parts.
    own = "[(None, 1, 128), (None, None, 128)]"
    assert last_block_shape(backbone) == own
    assert last_block_shape(classifier) == "(None, 1, 128)"  # the classifier's graph: [CLS] only
    assert last_block_shape(backbone) == own


def test_the_backbone_passes_the_backbone_harness(tmp_path):
    """The backbone harness (tests/task_harness.py `run_backbone_test`): config, `.keras` and save_pretrained ->
    from_pretrained round trips with equal outputs, shorter sequences, bfloat16 compute."""
    from tests.task_harness import run_backbone_test

    run_backbone_test(BertBackbone(TINY), _inputs(), {"sequence_output": (2, 6, 16), "pooled_output": (2, 16)},
                      str(tmp_path))
