"""BertEmbeddings, BertSelfAttention, BertEncoderBlock against numpy_bert (modeling.py's math)."""

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.attention import MASK_BIAS, BertSelfAttention, attention_bias_from_padding_mask
from keras_bert_impl.layers.dense import BertDense
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.transformer_encoder import BertEncoderBlock
from tests import numpy_bert
from tests.backend_utils import to_numpy

PADDING_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "float32")


def _random_hidden(shape=(2, 5, 8)):
    return np.random.RandomState(0).normal(size=shape).astype("float32")


def _attention_weights(layer):
    """The layer's q/k/v/o weights as [in, out] matrices for numpy_bert.self_attention."""
    hidden = layer.hidden_size
    out = []
    for dense in (layer.query, layer.key, layer.value):
        out += [to_numpy(dense.kernel).reshape(hidden, hidden), to_numpy(dense.bias).reshape(hidden)]
    out += [to_numpy(layer.output_dense.kernel).reshape(hidden, hidden), to_numpy(layer.output_dense.bias)]
    return out


def test_embeddings_are_sum_of_three_lookups_then_layer_norm():
    layer = BertEmbeddings(vocab_size=50, hidden_size=8, max_position_embeddings=16, type_vocab_size=2)
    token_ids = np.array([[3, 7, 9, 0], [1, 2, 3, 4]], "int32")
    segment_ids = np.array([[0, 0, 1, 1], [0, 1, 1, 1]], "int32")
    out = to_numpy(layer(token_ids, segment_ids))
    words = to_numpy(layer.word_embeddings.embeddings)
    segments = to_numpy(layer.token_type_embeddings.embeddings)
    positions = to_numpy(layer.position_embeddings.embeddings)
    expected = numpy_bert.layer_norm(
        words[token_ids] + segments[segment_ids] + positions[:4][None],
        to_numpy(layer.layer_norm.gamma),
        to_numpy(layer.layer_norm.beta),
        1e-12,
    )
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_embeddings_refuse_sequences_longer_than_the_position_table():
    layer = BertEmbeddings(vocab_size=50, hidden_size=8, max_position_embeddings=4, type_vocab_size=2)
    ids = np.zeros((1, 5), "int32")
    with pytest.raises(ValueError, match="sequence length 5 exceeds max_position_embeddings=4"):
        layer(ids, ids)


def test_attention_bias_is_finite_and_zero_on_real_tokens():
    bias = to_numpy(attention_bias_from_padding_mask(PADDING_MASK))
    assert bias.shape == (2, 1, 1, 5)
    np.testing.assert_array_equal(bias[1, 0, 0], [0, 0, 0, MASK_BIAS, MASK_BIAS])
    assert np.isfinite(bias).all()


@pytest.mark.parametrize("path", ["fused", "einsums", "explicit_with_dropout_layer"])
def test_self_attention_matches_modeling_py(path):
    """Every path of the attention, on every backend, forced with `cpu_paths.forced`: keras.ops.dot_product_attention
    ("fused"), the explicit products at inference ("explicit"), and the explicit products with the dropout
    layer in training."""
    from keras_bert_impl.backends import cpu_paths

    layer = BertSelfAttention(hidden_size=8, num_heads=2, dropout=0.3 if path == "explicit_with_dropout_layer" else 0.0)
    x = _random_hidden()
    bias = attention_bias_from_padding_mask(PADDING_MASK)
    if path != "explicit_with_dropout_layer":
        with cpu_paths.forced(attention="fused" if path == "fused" else "explicit"):
            out = layer(x, bias, training=False)
    else:
        layer(x, bias)  # build
        layer.probs_dropout.rate = 0.0  # keep the explicit (non-fused) branch but make dropout the identity
        out = layer(x, bias, training=True)
    expected = numpy_bert.self_attention(x, PADDING_MASK, *_attention_weights(layer), num_heads=2)
    np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)


def test_attention_dropout_is_active_only_in_training():
    layer = BertSelfAttention(hidden_size=8, num_heads=2, dropout=0.5)
    x = _random_hidden()
    bias = attention_bias_from_padding_mask(PADDING_MASK)
    inference = to_numpy(layer(x, bias, training=False))
    np.testing.assert_allclose(inference, to_numpy(layer(x, bias, training=False)), atol=1e-6)
    assert np.abs(to_numpy(layer(x, bias, training=True)) - inference).max() > 1e-3


@pytest.mark.parametrize("rate, dtype", [(0.1, "float32"), (0.5, "float32"), (0.1, "bfloat16")])
def test_dropout_zeroes_values_at_its_rate_and_scales_the_others_by_one_over_keep(rate, dtype):
    """BertDropout on every backend (torch: its own mask, `backends/torch_ops.dropout`): the share of zeros
    is the rate within 5 binomial standard deviations, also for bfloat16 values (a mask drawn from bfloat16
    uniforms drops 10.2% at rate 0.1), the kept values are x / (1 - rate), the gradient is the same mask
    times 1 / (1 - rate), and inference is the identity."""
    n = 1_000_000
    x = np.random.RandomState(1).uniform(1.0, 2.0, size=(4, n // 4)).astype("float32")
    layer = BertDropout(rate, dtype=dtype)
    x_in = keras.ops.cast(x, dtype)
    x = to_numpy(keras.ops.cast(x_in, "float32"))  # the values the layer sees

    def dropout(training):
        return to_numpy(keras.ops.cast(layer(x_in, training=training), "float32"))

    y = dropout(training=True)
    dropped = y == 0
    assert abs(dropped.mean() - rate) < 5 * np.sqrt(rate * (1 - rate) / n)
    np.testing.assert_allclose(y[~dropped], x[~dropped] / (1 - rate), rtol=1e-6 if dtype == "float32" else 1e-2)
    np.testing.assert_array_equal(dropout(training=False), x)
    # Two calls draw two masks.
    assert (dropped != (dropout(training=True) == 0)).mean() > rate * (1 - rate)
    if keras.backend.backend() == "torch" and dtype == "float32":  # the gradient: the same mask, scaled
        import torch

        xt = torch.tensor(x, requires_grad=True)
        out = layer(xt, training=True)
        out.sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), (out.detach().numpy() != 0) / (1 - rate), rtol=1e-6)


def test_dropout_on_torch_draws_from_torchs_default_generator():
    """The same torch seed, the same mask: the dropout of a model trained on torch follows torch.manual_seed
    (and the generator state a resumed run restores), as torch.nn.functional.dropout does."""
    if keras.backend.backend() != "torch":
        pytest.skip("torch's default generator: the torch backend's mask")
    import torch

    layer, x = BertDropout(0.3), np.ones((64, 64), "float32")
    torch.manual_seed(7)
    first = to_numpy(layer(x, training=True))
    torch.manual_seed(7)
    np.testing.assert_array_equal(to_numpy(layer(x, training=True)), first)


def test_dropout_config_and_class_round_trip_and_a_seed_or_noise_shape_takes_keras_path():
    layer = BertDropout(0.2, noise_shape=(None, 1), seed=3, name="d")
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is BertDropout and restored.get_config() == layer.get_config()
    # noise_shape (None, 1): one draw per row, as Keras' Dropout does.
    y = to_numpy(layer(np.ones((200, 6), "float32"), training=True))
    assert all(len(set(row.tolist())) == 1 for row in y) and 0 < (y[:, 0] == 0).mean() < 0.5


def test_torch_attention_products_equal_the_einsums():
    if keras.backend.backend() != "torch":
        pytest.skip("backends/torch_ops: the torch backend's fast path")
    import torch

    from keras_bert_impl.backends import torch_ops

    rng = np.random.RandomState(2)
    k, v = (torch.tensor(rng.normal(size=(2, 7, 3, 4)).astype("float32")) for _ in range(2))
    q = torch.tensor(rng.normal(size=(2, 5, 3, 4)).astype("float32"))  # 5 queries, 7 keys
    logits = torch_ops.attention_logits(k, q)
    torch.testing.assert_close(logits, torch.einsum("bsnh,btnh->bnts", k, q), atol=1e-5, rtol=1e-5)
    probs = torch.softmax(logits, -1)
    torch.testing.assert_close(torch_ops.attention_context(probs, v), torch.einsum("bnts,bsnh->btnh", probs, v),
                               atol=1e-5, rtol=1e-5)


def _torch_devices():
    """The devices torch computes on here: the CPU, and a CUDA GPU where there is one (a GPU machine's run of
    the torch suite checks the CUDA paths of `backends/torch_ops` with the same tests)."""
    import torch

    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def test_torch_sdpa_at_rate_0_is_the_attention_formula_and_at_rate_half_drops_half_and_rescales():
    """`torch_ops.scaled_dot_product_attention` (torch's attention at inference, and in training on a CUDA
    GPU): at rate 0 it is softmax(q k^T / sqrt(d) + bias) v; at rate 0.5, with v the identity over keys, each
    output is a probability times 2 or 0, half of them 0. On every device torch has here."""
    if keras.backend.backend() != "torch":
        pytest.skip("backends/torch_ops: the torch backend's fast path")
    for device in _torch_devices():
        _check_scaled_dot_product_attention(device)


def _check_scaled_dot_product_attention(device):
    import torch

    from keras_bert_impl.backends import torch_ops

    rng = np.random.RandomState(3)
    q = torch.tensor(rng.normal(size=(4, 6, 2, 8)).astype("float32"), device=device)  # [B, R, A, d], 8 keys
    k = torch.tensor(rng.normal(size=(4, 8, 2, 8)).astype("float32"), device=device)
    v = torch.eye(8, device=device).expand(4, 2, 8, 8).permute(0, 2, 1, 3)  # [B, T, A, d]: value t is one-hot t
    mask = np.ones((4, 8), "int32")
    mask[1, 5:] = 0
    bias = torch.tensor(to_numpy(attention_bias_from_padding_mask(mask)), device=device)  # [B, 1, 1, T]
    probs = torch.softmax(torch_ops.attention_logits(k, q / np.sqrt(8.0)) + bias, -1)  # [B, A, R, T]
    expected = probs.permute(0, 2, 1, 3)  # [B, R, A, T]: the context over one-hot values
    torch.testing.assert_close(torch_ops.scaled_dot_product_attention(q, k, v, bias, 0.0), expected, atol=1e-5,
                               rtol=1e-5)
    torch.manual_seed(0)
    dropped = torch.cat([torch_ops.scaled_dot_product_attention(q, k, v, bias, 0.5) for _ in range(50)])
    reference = expected.repeat(50, 1, 1, 1)
    kept = dropped != 0
    torch.testing.assert_close(dropped[kept], 2 * reference[kept], atol=1e-5, rtol=1e-5)
    assert 0.45 < 1 - kept[reference > 1e-6].float().mean().item() < 0.55, device


def test_torch_attention_layer_in_training_takes_the_fused_dropout_path_where_it_applies(monkeypatch):
    """BertSelfAttention in training calls `torch_ops.scaled_dot_product_attention` where it applies (a CUDA
    GPU; forced here on the CPU) with the layer's rate, and its output and gradients are those of that
    kernel; at inference it calls the same kernel at rate 0."""
    if keras.backend.backend() != "torch":
        pytest.skip("backends/torch_ops: the torch backend's fast path")
    import torch

    from keras_bert_impl.backends import torch_ops

    calls = []
    fused = torch_ops.scaled_dot_product_attention

    def recorded(q, k, v, bias, rate):
        calls.append(rate)
        return fused(q, k, v, bias, rate)

    monkeypatch.setattr(torch_ops, "fused_dropout_attention_applies", lambda q: True)
    monkeypatch.setattr(torch_ops, "scaled_dot_product_attention", recorded)
    layer = BertSelfAttention(hidden_size=8, num_heads=2, dropout=0.25)
    x = torch.tensor(_random_hidden(), requires_grad=True)
    bias = attention_bias_from_padding_mask(PADDING_MASK)
    torch.manual_seed(1)
    out = layer(x, bias, training=True)
    assert calls == [0.25]
    torch.manual_seed(1)
    q, k, v = layer.query(x), layer.key(x), layer.value(x)
    torch.testing.assert_close(out, layer.output_dense(fused(q, k, v, torch.as_tensor(bias), 0.25)))
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    assert calls == [0.25] and not torch.equal(layer(x, bias, training=False), out)
    assert calls == [0.25, 0.0]  # inference: the same kernel without dropout


@pytest.mark.parametrize("hidden_act, reference", [("gelu", numpy_bert.gelu), ("gelu_new", numpy_bert.gelu_tanh)])
def test_encoder_block_is_post_layer_norm_transformer(hidden_act, reference):
    block = BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=32, hidden_act=hidden_act, layer_norm_eps=1e-7)
    x = _random_hidden()
    out = to_numpy(block(x, attention_bias_from_padding_mask(PADDING_MASK)))

    attention = numpy_bert.self_attention(x, PADDING_MASK, *_attention_weights(block.attention), num_heads=2)
    ln1 = block.attention_layer_norm
    a = numpy_bert.layer_norm(x + attention, to_numpy(ln1.gamma), to_numpy(ln1.beta), 1e-7)
    h = reference(a @ to_numpy(block.intermediate_dense.kernel) + to_numpy(block.intermediate_dense.bias))
    y = h @ to_numpy(block.output_dense.kernel) + to_numpy(block.output_dense.bias)
    ln2 = block.output_layer_norm
    expected = numpy_bert.layer_norm(a + y, to_numpy(ln2.gamma), to_numpy(ln2.beta), 1e-7)
    np.testing.assert_allclose(out, expected, atol=1e-4)


@pytest.mark.parametrize("training", [False, True])
def test_encoder_block_output_range_equals_the_first_rows_of_the_full_output(training):
    """output_range=n computes only the first n positions; they still attend to every key."""
    block = BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=32)
    x = _random_hidden()
    bias = attention_bias_from_padding_mask(PADDING_MASK)
    full = to_numpy(block(x, bias))
    for n in (1, 3):
        sliced = to_numpy(block(x, bias, output_range=n, training=False))
        assert sliced.shape == (x.shape[0], n, 8)
        np.testing.assert_allclose(sliced, full[:, :n], atol=1e-5)
    if training:  # the dropout branch of the attention accepts fewer queries than keys too
        block.attention.probs_dropout.rate = 0.0
        block.attention.dropout = 0.5  # take the explicit branch, with identity dropout
        np.testing.assert_allclose(to_numpy(block(x, bias, output_range=1, training=True)), full[:, :1], atol=1e-5)


def test_activations_are_the_named_functions():
    x = np.linspace(-4, 4, 41).astype("float32")
    np.testing.assert_allclose(to_numpy(get_activation("gelu")(x)), numpy_bert.gelu(x), atol=1e-6)
    # Against Keras' exact GELU (JAX: get_activation's erf form against jax.nn.gelu's erfc form), wide range.
    wide = np.linspace(-12, 12, 2401).astype("float32")
    np.testing.assert_allclose(to_numpy(get_activation("gelu")(wide)),
                               to_numpy(keras.activations.gelu(wide, approximate=False)), atol=2e-6)
    np.testing.assert_allclose(to_numpy(get_activation("gelu")(wide)), numpy_bert.gelu(wide.astype("float64")),
                               atol=2e-6)
    np.testing.assert_allclose(to_numpy(get_activation("gelu_new")(x)), numpy_bert.gelu_tanh(x), atol=1e-6)
    np.testing.assert_allclose(to_numpy(get_activation("relu")(x)), np.maximum(x, 0), atol=0)
    with pytest.raises(ValueError, match="Unknown hidden_act 'elu'"):
        get_activation("elu")


def test_exact_gelu_gradient_is_phi_plus_x_times_the_normal_density():
    """d/dx x Phi(x) = Phi(x) + x phi(x), against float64, through the layer that applies it in the model
    (TensorFlow: `backends/tf_ops.gelu`'s written-out derivative; JAX: the gradient of `jax_ops.gelu`)."""
    from scipy.special import erf

    from tests.backend_utils import trainable_gradients

    x = np.linspace(-12, 12, 2401)
    layer = BertDense(x.size, use_bias=False, activation=get_activation("gelu"))
    model = keras.Sequential([keras.Input((1,)), layer])
    layer.kernel.assign(x[None, :].astype("float32"))  # output = gelu(kernel) for the input [[1.0]]
    x32 = x.astype("float32").astype("float64")  # the kernel's values
    np.testing.assert_allclose(to_numpy(model(np.ones((1, 1), "float32")))[0], numpy_bert.gelu(x32), atol=2e-6)
    (gradient,) = trainable_gradients(model, np.ones((1, 1), "float32"), keras.ops.sum)
    expected = 0.5 * (1 + erf(x32 / np.sqrt(2))) + x32 * np.exp(-0.5 * x32 ** 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(gradient[0], expected, atol=1e-6)


@pytest.mark.parametrize(
    "layer",
    [
        lambda: BertEmbeddings(vocab_size=50, hidden_size=8, max_position_embeddings=16, type_vocab_size=2, dropout=0.2),
        lambda: BertSelfAttention(hidden_size=8, num_heads=2, dropout=0.1),
        lambda: BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=32, hidden_act="relu"),
    ],
)
def test_layer_config_round_trip(layer):
    original = layer()
    config = original.get_config()
    restored = original.__class__.from_config(config)
    assert restored.get_config() == config
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(original)).get_config() == config


def test_dropout_on_jax_cpu_is_keras_dropout_with_the_original_threefry_bits():
    """On JAX's CPU, one process, no distribution: BertDropout's mask is Keras' Dropout's from the same seed
    generator state, drawn with `jax_threefry_partitionable` off (a different stream of the same generator:
    not the mask of JAX's default layout), and under a Keras distribution it is Keras' own mask."""
    if keras.backend.backend() != "jax":
        pytest.skip("backends/jax_ops: the JAX backend's fast path")
    import jax

    from keras_bert_impl.backends import jax_ops

    x = np.random.RandomState(0).uniform(1.0, 2.0, size=(64, 256)).astype("float32")
    ours, theirs = BertDropout(0.3), keras.layers.Dropout(0.3)
    theirs.seed_generator.state.assign(ours.seed_generator.state.value)
    with jax.threefry_partitionable(False):
        unpartitioned = to_numpy(theirs(x, training=True))
    theirs.seed_generator.state.assign(ours.seed_generator.state.value)
    partitioned = to_numpy(theirs(x, training=True))
    theirs.seed_generator.state.assign(ours.seed_generator.state.value)
    assert jax_ops.draws_faster_unpartitioned()
    np.testing.assert_array_equal(to_numpy(ours(x, training=True)), unpartitioned)
    assert not np.array_equal(unpartitioned, partitioned)

    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
    try:
        assert not jax_ops.draws_faster_unpartitioned()
        ours.seed_generator.state.assign(theirs.seed_generator.state.value)
        np.testing.assert_array_equal(to_numpy(ours(x, training=True)), to_numpy(theirs(x, training=True)))
    finally:
        keras.distribution.set_distribution(None)


@pytest.mark.parametrize("name", ["dense", "scalar_mix", "crf"])
def test_layers_pass_the_layer_harness(name, tmp_path):
    """The layer harness (tests/task_harness.py `run_layer_test`): config and `.keras` round trips, output
    shapes, bfloat16 compute with float32 variables, a training step."""
    from keras_bert_impl.layers import CRF, BertDense, ScalarMix
    from tests.task_harness import run_layer_test

    x = np.random.RandomState(0).normal(size=(2, 5, 8)).astype("float32")
    cases = {
        "dense": (BertDense, {"units": 4}, x, (2, 5, 4), 2, True),
        "scalar_mix": (ScalarMix, {}, [x, 2 * x], (2, 5, 8), 2, True),
        "crf": (CRF, {"num_tags": 8}, x, (2, 5, 8), 1, False),  # identity: its transitions train through its loss
    }
    cls, init_kwargs, input_data, shape, num_weights, train = cases[name]
    run_layer_test(cls, init_kwargs, input_data, shape, expected_num_trainable_weights=num_weights,
                   tmp_path=str(tmp_path), run_training_check=train)
