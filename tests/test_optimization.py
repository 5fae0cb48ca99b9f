"""BERT's schedule and optimizers against numpy re-implementations of google-research/bert's formulas."""

import keras
import numpy as np
import pytest

from keras_bert_impl.training.optimization import AdamWeightDecay, Lamb, WarmupLinearDecay, create_optimizer
from tests.backend_utils import to_numpy

NUM_STEPS = 5
# Per-step gradient scales: some steps exceed the global norm 1.0 (clipped), some do not.
GRAD_SCALES = [3.0, 0.1, 5.0, 0.5, 2.0]
DECAYED = {"dense/kernel", "classifier/kernel"}  # everything else matches layer_norm / bias


# ----------------------------------------------------------------------------------------------
# numpy references
# ----------------------------------------------------------------------------------------------


def np_bert_learning_rate(step, init_lr, num_train_steps, num_warmup_steps):
    """optimization.py: polynomial_decay(power=1, end=0, cycle=False) then the warmup blend."""
    global_step = min(step, num_train_steps)
    learning_rate = (init_lr - 0.0) * (1 - global_step / num_train_steps) ** 1.0 + 0.0
    if num_warmup_steps:
        warmup_learning_rate = init_lr * (float(step) / float(num_warmup_steps))
        is_warmup = float(step < num_warmup_steps)
        learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate
    return learning_rate


def np_clip_by_global_norm(grads, clip_norm):
    """tf.clip_by_global_norm: t * clip_norm / max(global_norm, clip_norm)."""
    if clip_norm is None:
        return grads
    global_norm = np.sqrt(sum(np.sum(np.square(g)) for g in grads.values()))
    return {k: g * clip_norm / max(global_norm, clip_norm) for k, g in grads.items()}


def np_adam_weight_decay(
    weights, grads_per_step, lrs, weight_decay_rate, decayed, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
    clip_norm=1.0, bias_correction=False,
):
    """The original AdamWeightDecayOptimizer.apply_gradients (+ optional bias correction)."""
    weights = {k: w.astype("float64") for k, w in weights.items()}
    m = {k: np.zeros_like(w) for k, w in weights.items()}
    v = {k: np.zeros_like(w) for k, w in weights.items()}
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        grads = np_clip_by_global_norm(grads, clip_norm)
        for k in weights:
            g = grads[k]
            m[k] = beta_1 * m[k] + (1.0 - beta_1) * g
            v[k] = beta_2 * v[k] + (1.0 - beta_2) * np.square(g)
            m_value, v_value = m[k], v[k]
            if bias_correction:
                m_value = m_value / (1 - beta_1**t)
                v_value = v_value / (1 - beta_2**t)
            update = m_value / (np.sqrt(v_value) + epsilon)
            if k in decayed and weight_decay_rate:
                update += weight_decay_rate * weights[k]
            weights[k] = weights[k] - lr * update
    return weights


def np_lamb(
    weights, grads_per_step, lrs, weight_decay_rate, decayed, adapted, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
    clip_norm=1.0,
):
    """LAMB (You et al. 2019; TF-Addons formulation)."""
    weights = {k: w.astype("float64") for k, w in weights.items()}
    m = {k: np.zeros_like(w) for k, w in weights.items()}
    v = {k: np.zeros_like(w) for k, w in weights.items()}
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        grads = np_clip_by_global_norm(grads, clip_norm)
        for k in weights:
            g = grads[k]
            m[k] = beta_1 * m[k] + (1.0 - beta_1) * g
            v[k] = beta_2 * v[k] + (1.0 - beta_2) * np.square(g)
            r = (m[k] / (1 - beta_1**t)) / (np.sqrt(v[k] / (1 - beta_2**t)) + epsilon)
            if k in decayed and weight_decay_rate:
                r = r + weight_decay_rate * weights[k]
            ratio = 1.0
            if k in adapted:
                w_norm, r_norm = np.linalg.norm(weights[k]), np.linalg.norm(r)
                ratio = w_norm / r_norm if (w_norm > 0 and r_norm > 0) else 1.0
            weights[k] = weights[k] - lr * ratio * r
    return weights


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _small_model():
    """Dense -> LayerNorm -> Dense: kernels, biases and LayerNorm gamma/beta with BERT-style names."""
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, name="dense", bias_initializer="random_normal")(inputs)
    hidden = keras.layers.LayerNormalization(
        name="attention_layer_norm", gamma_initializer="random_normal", beta_initializer="random_normal"
    )(hidden)
    outputs = keras.layers.Dense(2, name="classifier")(hidden)
    return keras.Model(inputs, outputs)


def _weights(model):
    return {v.path: to_numpy(v).copy() for v in model.trainable_variables}


def _random_grads(model, seed):
    rng = np.random.RandomState(seed)
    steps = []
    for scale in GRAD_SCALES:
        steps.append(
            {v.path: (scale * rng.normal(size=v.shape) / 3.0).astype("float32") for v in model.trainable_variables}
        )
    return steps


def _run(optimizer, model, grads_per_step):
    variables = model.trainable_variables
    for grads in grads_per_step:
        optimizer.apply([keras.ops.convert_to_tensor(grads[v.path]) for v in variables], variables)
    return _weights(model)


def _assert_weights_close(actual, expected, atol=2e-5):
    assert set(actual) == set(expected)
    for k in expected:
        np.testing.assert_allclose(actual[k], expected[k], atol=atol, rtol=1e-4, err_msg=k)


# ----------------------------------------------------------------------------------------------
# the schedule
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_warmup_steps", [0, 3])
def test_warmup_linear_decay_matches_original_formula(num_warmup_steps):
    schedule = WarmupLinearDecay(init_lr=2e-3, num_train_steps=10, num_warmup_steps=num_warmup_steps)
    steps = list(range(0, 14))
    actual = [float(to_numpy(schedule(keras.ops.convert_to_tensor(s, "int32")))) for s in steps]
    expected = [np_bert_learning_rate(s, 2e-3, 10, num_warmup_steps) for s in steps]
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-12)
    if num_warmup_steps:
        # Hand-checked values: step 0 -> 0 (as in the original), warmup is linear, then the
        # decay is counted from step 0: step 3 -> 2e-3 * (1 - 3/10).
        assert actual[0] == 0.0
        assert actual[1] == pytest.approx(2e-3 / 3)
        assert actual[3] == pytest.approx(1.4e-3)
    else:
        assert actual[0] == pytest.approx(2e-3)
    assert actual[10:] == [0.0] * 4  # clamped at num_train_steps


def test_schedule_config_round_trip():
    schedule = WarmupLinearDecay(init_lr=1e-4, num_train_steps=100, num_warmup_steps=10, name="bert_lr")
    config = schedule.get_config()
    assert WarmupLinearDecay.from_config(config).get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert isinstance(restored, WarmupLinearDecay) and restored.get_config() == config
    with pytest.raises(ValueError):
        WarmupLinearDecay(1e-4, num_train_steps=0, num_warmup_steps=0)


# ----------------------------------------------------------------------------------------------
# AdamWeightDecay
# ----------------------------------------------------------------------------------------------


def test_adam_weight_decay_matches_original_over_several_steps():
    model = _small_model()
    initial = _weights(model)
    grads = _random_grads(model, seed=0)
    schedule = WarmupLinearDecay(init_lr=0.1, num_train_steps=8, num_warmup_steps=2)
    optimizer = AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.3)
    actual = _run(optimizer, model, grads)

    lrs = [np_bert_learning_rate(s, 0.1, 8, 2) for s in range(NUM_STEPS)]
    assert lrs[:3] == [0.0, 0.05, pytest.approx(0.075)]
    expected = np_adam_weight_decay(initial, grads, lrs, 0.3, DECAYED)
    _assert_weights_close(actual, expected)
    assert int(to_numpy(optimizer.iterations)) == NUM_STEPS

    # The reference is sensitive to what is being checked: without the global-norm clipping or
    # with bias correction it gives clearly different weights.
    unclipped = np_adam_weight_decay(initial, grads, lrs, 0.3, DECAYED, clip_norm=None)
    corrected = np_adam_weight_decay(initial, grads, lrs, 0.3, DECAYED, bias_correction=True)
    for other in (unclipped, corrected):
        assert max(np.max(np.abs(other[k] - expected[k])) for k in expected) > 1e-3


def test_adam_weight_decay_with_bias_correction_is_adamw():
    model = _small_model()
    initial = _weights(model)
    grads = _random_grads(model, seed=1)
    optimizer = AdamWeightDecay(learning_rate=0.01, weight_decay_rate=0.1, bias_correction=True, global_clipnorm=None)
    actual = _run(optimizer, model, grads)
    expected = np_adam_weight_decay(
        initial, grads, [0.01] * NUM_STEPS, 0.1, DECAYED, clip_norm=None, bias_correction=True
    )
    _assert_weights_close(actual, expected)


@pytest.mark.parametrize("bias_correction", [False, True])
def test_torch_fused_update_is_taken_and_equals_the_generic_update(monkeypatch, bias_correction):
    """On torch, AdamWeightDecay runs torch's fused AdamW kernel; it gives the per-variable update's weights."""
    if keras.backend.backend() != "torch":
        pytest.skip("the fused kernel is the torch backend's path")
    from keras_bert_impl.backends import torch_adamw as torch_optimization

    grads = _random_grads(_small_model(), seed=3)
    results, calls = [], []
    fused = torch_optimization.adam_weight_decay_update
    monkeypatch.setattr(torch_optimization, "adam_weight_decay_update", lambda *a: calls.append(1) or fused(*a))
    for use_fused in (True, False):
        monkeypatch.setattr(torch_optimization, "supports_fused_update", lambda *a, use=use_fused: use)
        keras.utils.set_random_seed(0)
        model = _small_model()
        schedule = WarmupLinearDecay(init_lr=0.1, num_train_steps=8, num_warmup_steps=2)
        results.append(_run(AdamWeightDecay(schedule, weight_decay_rate=0.3, bias_correction=bias_correction), model, grads))
    assert len(calls) == NUM_STEPS  # the fused path ran at every step of the first run, never in the second
    _assert_weights_close(results[0], results[1], atol=1e-6)


def test_excluded_variables_get_no_weight_decay():
    """Zero gradients: m = v = 0, so the only change is w *= (1 - lr * weight_decay_rate)."""
    model = _small_model()
    initial = _weights(model)
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.5)
    zeros = [{k: np.zeros_like(w) for k, w in initial.items()}] * 2
    actual = _run(optimizer, model, zeros)
    assert set(initial) == {
        "dense/kernel", "dense/bias", "attention_layer_norm/gamma", "attention_layer_norm/beta",
        "classifier/kernel", "classifier/bias",
    }
    for k, w in initial.items():
        expected = w * (1 - 0.05) ** 2 if k in DECAYED else w
        np.testing.assert_allclose(actual[k], expected, rtol=1e-6, err_msg=k)

    # Custom patterns: excluding only the classifier leaves LayerNorm and biases decayed.
    model = _small_model()
    initial = _weights(model)
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.5, exclude_from_weight_decay=["^classifier/"])
    actual = _run(optimizer, model, zeros[:1])
    for k, w in initial.items():
        expected = w if k.startswith("classifier/") else w * 0.95
        np.testing.assert_allclose(actual[k], expected, rtol=1e-6, err_msg=k)


def test_global_clipnorm_bounds_the_gradient_norm():
    """beta_1 = 0 and a huge epsilon make the step lr * g_clipped / (sqrt(0.001 g_clipped^2) + eps)."""
    model = _small_model()
    initial = _weights(model)
    eps = 1e6
    optimizer = AdamWeightDecay(learning_rate=eps, weight_decay_rate=0.0, beta_1=0.0, epsilon=eps)
    grads = _random_grads(model, seed=2)[2]  # scale 5: global norm well above 1
    norm = np.sqrt(sum(np.sum(g.astype("float64") ** 2) for g in grads.values()))
    assert norm > 2
    actual = _run(optimizer, model, [grads])
    applied = {k: initial[k] - actual[k] for k in initial}
    for k in initial:
        g_clipped = grads[k] / norm
        expected = eps * g_clipped / (np.sqrt(0.001 * g_clipped**2) + eps)
        np.testing.assert_allclose(applied[k], expected, rtol=1e-4, atol=1e-6, err_msg=k)
    # The applied step is (almost exactly) the clipped gradient: global norm 1.
    assert np.sqrt(sum(np.sum(a.astype("float64") ** 2) for a in applied.values())) == pytest.approx(1.0, rel=1e-4)

    # Below the threshold nothing is clipped.
    model = _small_model()
    initial = _weights(model)
    small = _random_grads(model, seed=2)[1]  # scale 0.1
    small_norm = np.sqrt(sum(np.sum(g.astype("float64") ** 2) for g in small.values()))
    assert small_norm < 1
    actual = _run(AdamWeightDecay(learning_rate=eps, weight_decay_rate=0.0, beta_1=0.0, epsilon=eps), model, [small])
    for k in initial:
        np.testing.assert_allclose(initial[k] - actual[k], small[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_keras_weight_decay_argument_is_refused():
    with pytest.raises(ValueError, match="weight_decay_rate"):
        AdamWeightDecay(weight_decay=0.01)


# ----------------------------------------------------------------------------------------------
# LAMB
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer_adaptation", ["default", "all"])
def test_lamb_matches_numpy(layer_adaptation):
    model = _small_model()
    # A zero kernel exercises the "||w|| = 0 -> trust ratio 1" branch on the first step.
    model.get_layer("classifier").kernel.assign(np.zeros((4, 2), "float32"))
    initial = _weights(model)
    grads = _random_grads(model, seed=3)
    schedule = WarmupLinearDecay(init_lr=0.05, num_train_steps=6, num_warmup_steps=1)
    if layer_adaptation == "default":
        optimizer = Lamb(learning_rate=schedule, weight_decay_rate=0.2)
        adapted = DECAYED  # defaults to the weight-decay exclusions
    else:
        optimizer = Lamb(learning_rate=schedule, weight_decay_rate=0.2, exclude_from_layer_adaptation=[])
        adapted = set(initial)
    actual = _run(optimizer, model, grads)
    lrs = [np_bert_learning_rate(s, 0.05, 6, 1) for s in range(NUM_STEPS)]
    expected = np_lamb(initial, grads, lrs, 0.2, DECAYED, adapted)
    _assert_weights_close(actual, expected)
    # The trust ratio matters: without layer adaptation the result differs.
    no_adaptation = np_lamb(initial, grads, lrs, 0.2, DECAYED, adapted=set())
    assert max(np.max(np.abs(no_adaptation[k] - expected[k])) for k in expected) > 1e-3


# ----------------------------------------------------------------------------------------------
# create_optimizer, model.fit and serialization
# ----------------------------------------------------------------------------------------------


def _linear_regression_data():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(8, 3)).astype("float32")
    y = rng.normal(size=(8, 2)).astype("float32")
    return x, y


def _np_linear_regression_grads(weights, x, y):
    """Gradients of Keras's "mse" (mean over all N * 2 entries) for y_hat = x W + b."""
    y_hat = x.astype("float64") @ weights["dense/kernel"] + weights["dense/bias"]
    d_y = 2.0 * (y_hat - y) / y.size
    return {"dense/kernel": x.T.astype("float64") @ d_y, "dense/bias": d_y.sum(0)}


@pytest.mark.parametrize("optimizer_type", ["adamw", "lamb"])
def test_create_optimizer_in_model_fit_matches_numpy(optimizer_type):
    """The compiled train step of every backend reproduces the numpy optimizer, step by step."""
    x, y = _linear_regression_data()
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="dense", bias_initializer="ones")(inputs))
    weights = {k: w.astype("float64") for k, w in _weights(model).items()}
    optimizer = create_optimizer(
        0.1, num_train_steps=6, num_warmup_steps=2, optimizer_type=optimizer_type, weight_decay_rate=0.1
    )
    assert type(optimizer) is {"adamw": AdamWeightDecay, "lamb": Lamb}[optimizer_type]
    model.compile(optimizer=optimizer, loss="mse")
    epochs = 5
    model.fit(x, y, batch_size=len(x), epochs=epochs, shuffle=False, verbose=0)

    # numpy: one full-batch step per epoch, gradients recomputed from the current weights (the
    # references are replayed from the initial weights over the gradients seen so far).
    initial = dict(weights)
    grads_per_step = []
    for step in range(epochs):
        grads_per_step.append(_np_linear_regression_grads(weights, x, y))
        lrs = [np_bert_learning_rate(s, 0.1, 6, 2) for s in range(step + 1)]
        if optimizer_type == "adamw":
            weights = np_adam_weight_decay(initial, grads_per_step, lrs, 0.1, {"dense/kernel"})
        else:
            weights = np_lamb(initial, grads_per_step, lrs, 0.1, {"dense/kernel"}, {"dense/kernel"})
    _assert_weights_close(_weights(model), weights, atol=5e-5)


def test_create_optimizer_rejects_unknown_type():
    with pytest.raises(ValueError, match="optimizer_type"):
        create_optimizer(1e-3, 10, 1, optimizer_type="sgd")


@pytest.mark.parametrize("cls", [AdamWeightDecay, Lamb])
def test_optimizer_config_round_trip_including_schedule(cls):
    schedule = WarmupLinearDecay(init_lr=3e-4, num_train_steps=50, num_warmup_steps=5)
    extra = {"bias_correction": True} if cls is AdamWeightDecay else {"exclude_from_layer_adaptation": ["bias"]}
    optimizer = cls(
        learning_rate=schedule, weight_decay_rate=0.02, beta_2=0.98, epsilon=1e-8,
        exclude_from_weight_decay=["layer_norm", "bias"], global_clipnorm=2.0, **extra,
    )
    config = optimizer.get_config()
    assert "weight_decay" not in config
    for restored in (
        cls.from_config(dict(config)),
        keras.optimizers.deserialize(keras.optimizers.serialize(optimizer)),
    ):
        assert type(restored) is cls
        assert isinstance(restored._learning_rate, WarmupLinearDecay)
        assert restored._learning_rate.get_config() == schedule.get_config()
        assert restored.get_config() == config
        assert restored.global_clipnorm == 2.0 and restored.weight_decay_rate == 0.02


def test_compiled_model_saves_and_loads_with_the_optimizer(tmp_path):
    x, y = _linear_regression_data()
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")])
    model.compile(optimizer=create_optimizer(1e-2, 10, 2), loss="mse")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.optimizer, AdamWeightDecay)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert int(to_numpy(loaded.optimizer.iterations)) == 2
    for a, b in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b))


def test_default_exclusions_on_the_bert_backbone_match_the_original():
    """Decayed: embeddings and kernels; not decayed: every LayerNorm gamma/beta and every bias."""
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.config import BertConfig

    config = BertConfig(
        vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
        max_position_embeddings=16,
    )
    backbone = BertBackbone(config)
    optimizer = AdamWeightDecay()
    lamb = Lamb()
    for variable in backbone.trainable_variables:
        leaf = variable.path.split("/")[-1]
        expected = leaf in ("kernel", "embeddings")
        assert leaf in ("kernel", "embeddings", "bias", "gamma", "beta"), variable.path
        assert optimizer._do_use_weight_decay(variable) == expected, variable.path
        assert lamb._do_layer_adaptation(variable) == expected, variable.path
