"""BertDense / BertEinsumDense: Keras' Dense / EinsumDense, with a float32 bias and activation under bfloat16."""

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.dense import BertDense, BertEinsumDense
from tests.backend_utils import to_numpy


def _x(shape=(2, 5, 8), seed=0):
    return np.random.RandomState(seed).normal(size=shape).astype("float32")


def _pair(make_ours, make_keras, x, dtype):
    ours, theirs = make_ours(dtype), make_keras(dtype)
    ours.build(x.shape)
    theirs.build(x.shape)
    theirs.set_weights(ours.get_weights())
    return ours, theirs


LAYERS = {
    "dense_gelu": (lambda d: BertDense(16, activation="gelu", dtype=d, bias_initializer="random_normal"),
                   lambda d: keras.layers.Dense(16, activation="gelu", dtype=d)),
    "einsum_dense": (lambda d: BertEinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh", dtype=d,
                                               bias_initializer="random_normal"),
                     lambda d: keras.layers.EinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh", dtype=d)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_float32_outputs_equal_the_keras_layer(name):
    x = _x()
    ours, theirs = _pair(*LAYERS[name], x, "float32")
    np.testing.assert_allclose(to_numpy(ours(x)), to_numpy(theirs(x)), atol=1e-6)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_mixed_bfloat16_returns_bfloat16_within_bf16_rounding_of_float32(name):
    x = _x()
    ours, reference = _pair(*LAYERS[name], x, "float32")
    mixed, _ = _pair(*LAYERS[name], x, "mixed_bfloat16")
    mixed.set_weights(ours.get_weights())
    y = mixed(x)
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in mixed.weights)
    expected = to_numpy(reference(x))
    # bfloat16 operands (8-bit mantissa: 2^-8 relative per rounding) and a bfloat16 output.
    np.testing.assert_allclose(to_numpy(keras.ops.cast(y, "float32")), expected, rtol=3e-2, atol=3e-2)


def test_bfloat16_epilogue_is_used_where_measured_faster_and_keras_call_elsewhere():
    """The float32 epilogue runs at inference on JAX and TensorFlow and in training on JAX only: on
    TensorFlow its gradient made a bert_small bf16 training step 50x slower. Elsewhere the layer computes
    bit for bit what Keras' own bfloat16 call does. (The GELU shows the difference: a float32 bias add
    alone rounds as TensorFlow's bfloat16 add does.)"""
    x = _x()
    ours, theirs = _pair(*LAYERS["dense_gelu"], x, "mixed_bfloat16")
    backend = keras.backend.backend()
    for training, epilogue in ((False, backend in ("jax", "tensorflow")), (True, backend == "jax")):
        a = to_numpy(keras.ops.cast(ours(x, training=training), "float32"))
        b = to_numpy(keras.ops.cast(theirs(x, training=training), "float32"))
        assert np.array_equal(a, b) != epilogue, (training, backend)
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2)


def test_two_dimensional_inputs_and_no_bias():
    x = _x((3, 8))
    ours, theirs = _pair(lambda d: BertDense(4, use_bias=False, dtype=d), lambda d: keras.layers.Dense(4, use_bias=False, dtype=d),
                         x, "mixed_bfloat16")
    np.testing.assert_allclose(to_numpy(keras.ops.cast(ours(x), "float32")),
                               to_numpy(keras.ops.cast(theirs(x), "float32")), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_config_round_trip(name):
    layer = LAYERS[name][0]("float32")
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer) and restored.get_config() == layer.get_config()


@pytest.mark.parametrize("equation, output_shape, bias_axes, input_shape", [
    ("btd,dnh->btnh", (None, 2, 4), "nh", (3, 5, 8)),  # the query, key and value projections
    ("btnh,nhd->btd", (None, 8), "d", (3, 5, 2, 4)),  # the attention's output projection
])
def test_attention_projections_equal_keras_einsum_dense_in_values_and_gradients(equation, output_shape, bias_axes,
                                                                                input_shape):
    """The equations of BertSelfAttention, in a functional model whose batch and length are unknown until
    called (TensorFlow computes them as one 2D matmul: `_einsum_as_one_matmul`): the output and the gradients
    of the kernel, the bias and the input are Keras' EinsumDense's."""
    from tests.backend_utils import trainable_gradients

    def model(layer):
        inputs = keras.Input((None,) + input_shape[2:])
        return keras.Model(inputs, layer(inputs))

    ours = model(BertEinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes,
                                 bias_initializer="random_normal"))
    theirs = model(keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes))
    theirs.set_weights(ours.get_weights())
    x = _x(input_shape)
    np.testing.assert_allclose(ours.predict_on_batch(x), theirs.predict_on_batch(x), atol=1e-5)
    weights = keras.ops.convert_to_tensor(np.random.RandomState(1).normal(size=(3, 5) + output_shape[1:]), "float32")

    def loss(y):
        return keras.ops.sum(y * weights)

    for a, b in zip(trainable_gradients(ours, x, loss), trainable_gradients(theirs, x, loss)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("input_shape, use_bias", [((3, 5, 8), True), ((4, 8), True), ((3, 5, 8), False)])
def test_dense_equals_keras_dense_in_values_and_gradients(input_shape, use_bias):
    """BertDense in float32 (torch: through `torch_ops.onednn_dense`, oneDNN's products) gives Keras' Dense's output
    and gradients: its kernel's and bias's, and its input's, which reach the Keras layer below it."""
    from tests.backend_utils import trainable_gradients

    def model(layer):
        inputs = keras.Input(input_shape[1:])
        below = keras.layers.Dense(8, kernel_initializer="random_normal", name="below")
        return keras.Model(inputs, layer(below(inputs)))

    ours = model(BertDense(6, activation="gelu", use_bias=use_bias, bias_initializer="random_normal"))
    theirs = model(keras.layers.Dense(6, activation="gelu", use_bias=use_bias))
    theirs.set_weights(ours.get_weights())
    x = _x(input_shape)
    np.testing.assert_allclose(ours.predict_on_batch(x), theirs.predict_on_batch(x), atol=1e-5)
    weights = keras.ops.convert_to_tensor(np.random.RandomState(1).normal(size=input_shape[:-1] + (6,)), "float32")

    def loss(y):
        return keras.ops.sum(y * weights)

    ours_grads, theirs_grads = trainable_gradients(ours, x, loss), trainable_gradients(theirs, x, loss)
    assert len(ours_grads) == len(theirs_grads) == (4 if use_bias else 3)
    for a, b in zip(ours_grads, theirs_grads):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fan_in, fan_out", [(8, 16), (8, 8), (16, 8)])
@pytest.mark.tensorflow
def test_tensorflow_dense_gradient_reads_the_kernel_transpose_written_out_where_in_at_most_out(fan_in, fan_out):
    """`backends.dense` in float32 on TensorFlow's CPU (`tf_ops.dense_with_transposed_gradient`, the path
    `cpu_paths` chooses on both kinds of CPU, forced here; tests/test_cpu_paths.py forces the other): its output
    and the gradients of its input, kernel and bias equal a float64 product's; where in <= out the input's
    gradient multiplies by a transpose of the kernel computed first (a Transpose op in the gradient's graph,
    3D so that TensorFlow's optimizer keeps it), elsewhere by the kernel read transposed (`transpose_b`,
    TensorFlow's own MatMul gradient)."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("backends/tf_ops: the TensorFlow backend's fast path")
    import tensorflow as tf

    from keras_bert_impl import backends
    from keras_bert_impl.backends import cpu_paths

    rng = np.random.RandomState(4)
    x, kernel = rng.normal(size=(3, 5, fan_in)), rng.normal(size=(fan_in, fan_out))
    bias, upstream = rng.normal(size=(fan_out,)), rng.normal(size=(3, 5, fan_out))

    @tf.function
    def forward_backward(x, kernel, bias, upstream):
        with tf.GradientTape() as tape, cpu_paths.forced(dense="transposed_gradient"):
            tape.watch([x, kernel, bias])
            y = backends.dense(x, kernel, bias)
        return [y] + tape.gradient(y, [x, kernel, bias], output_gradients=upstream)

    inputs = [tf.constant(a, tf.float32) for a in (x, kernel, bias, upstream)]
    expected = [x @ kernel + bias, upstream @ kernel.T, np.einsum("bti,bto->io", x, upstream), upstream.sum((0, 1))]
    for ours, reference in zip(forward_backward(*inputs), expected):
        np.testing.assert_allclose(ours.numpy(), reference, rtol=1e-5, atol=1e-5)

    graph = forward_backward.get_concrete_function(*inputs).graph
    transposes = [op for op in graph.get_operations() if op.type == "Transpose"]
    transposed_reads = [op for op in graph.get_operations()
                        if op.type == "MatMul" and op.get_attr("transpose_b")]
    assert len(transposes) == (1 if fan_in <= fan_out else 0)
    assert len(transposed_reads) == (0 if fan_in <= fan_out else 1)


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_jax_dense_products_and_their_gradients_are_two_dimensional_dots(dtype):
    """On JAX, BertDense and the attention's projections (BertEinsumDense) compute their product over a
    [batch, seq, ...] input as one [rows, in] x [in, out] dot, whose gradients are 2D dots too: XLA's CPU
    compiles those to faster dots than a product over the 3D input (docs/performance.md). In float32 and
    under mixed_bfloat16 (the float32 epilogue's product). The values and gradients equal Keras' layers'
    (the tests above)."""
    if keras.backend.backend() != "jax":
        pytest.skip("the JAX backend's product")
    import jax

    layers = [BertDense(6, activation="gelu", dtype=dtype),
              BertEinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh", dtype=dtype),
              BertEinsumDense("btnh,nhd->btd", output_shape=(None, 8), bias_axes="d", dtype=dtype)]
    for layer, shape in zip(layers, [(3, 5, 8), (3, 5, 8), (3, 5, 2, 4)]):
        layer.build(shape)

        def loss(weights, x, layer=layer):
            values, _ = layer.stateless_call(weights, [], x, training=True)
            return keras.ops.sum(keras.ops.cast(values, "float32") ** 2)

        weights = [v.value for v in layer.trainable_variables]
        jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(weights, _x(shape)).jaxpr
        dots = [eqn for eqn in jaxpr.eqns if eqn.primitive.name == "dot_general"]
        assert len(dots) == 3, (layer.name, len(dots))  # the product, the input's and the kernel's gradients
        assert all(var.aval.ndim == 2 for eqn in dots for var in eqn.invars), layer.name


def test_an_exact_gelu_layer_computes_through_dense_gelu_built_and_revived_from_its_config(monkeypatch):
    """A float32 BertDense of the exact GELU (ours, or Keras' that its config "gelu" revives as) computes through
    `backends.dense_gelu` (on torch at inference, one oneDNN product), with the outputs of Keras' Dense."""
    from keras_bert_impl import backends
    from keras_bert_impl.layers.activations import gelu

    calls = []
    fused = backends.dense_gelu
    monkeypatch.setattr(backends, "dense_gelu", lambda *a: calls.append(1) or fused(*a))
    x = _x()
    ours = BertDense(16, activation=gelu, bias_initializer="random_normal")
    ours.build(x.shape)
    revived = BertDense.from_config(ours.get_config())
    revived.build(x.shape)
    revived.set_weights(ours.get_weights())
    assert revived.activation is keras.activations.gelu
    reference = keras.layers.Dense(16, activation="gelu")
    reference.build(x.shape)
    reference.set_weights(ours.get_weights())
    for layer in (ours, revived):
        np.testing.assert_allclose(to_numpy(layer(x)), to_numpy(reference(x)), atol=1e-6)
    assert len(calls) == 2
