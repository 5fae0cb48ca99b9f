"""`backends.attention`'s choice of path on a CPU, and the argument layout of JAX's cuDNN path.

The cuDNN path (`jax_ops.dot_product_attention(..., implementation="cudnn")`) runs only on a CUDA GPU; here
the same call with `implementation="xla"` is checked against our attention, which proves the layout of its
arguments ([B, T, A, d] queries, keys and values, BERT's [B, 1, 1, T] bias broadcast to [B, 1, R, T]).
"""

import sys

import keras
import numpy as np
import pytest

from keras_bert_impl import backends
from keras_bert_impl.layers.attention import attention_bias_from_padding_mask
from tests.backend_utils import to_numpy

ON_JAX = keras.backend.backend() == "jax"


def _inputs(rows=5):
    """q [2, rows, 2, 8], k, v [2, 5, 2, 8] and BERT's additive bias [2, 1, 1, 5] (the second sequence has 2
    padding positions), float32."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, n, 2, 8)).astype("float32") for n in (rows, 5, 5))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    return q, k, v, to_numpy(attention_bias_from_padding_mask(keras.ops.convert_to_tensor(mask)))


def _numpy_attention(q, k, v, bias):
    logits = np.einsum("brad,btad->bart", q, k) / np.sqrt(q.shape[-1]) + bias  # [B, A, R, T]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.einsum("bart,btad->brad", probs, v)  # [B, R, A, d]


def test_attention_on_a_cpu_takes_no_cudnn_path_and_equals_softmax_attention(monkeypatch):
    q, k, v, bias = _inputs()
    if ON_JAX:
        from keras_bert_impl.backends import jax_ops

        assert not jax_ops.cudnn_attention_applies(keras.ops.cast(q, "bfloat16"))  # JAX's CPU
        monkeypatch.setattr(jax_ops, "dot_product_attention", lambda *args, **kwargs: pytest.fail("cuDNN path"))
    else:
        assert "keras_bert_impl.backends.jax_ops" not in sys.modules  # imported only under JAX
    out = to_numpy(backends.attention(*map(keras.ops.convert_to_tensor, (q, k, v, bias))))
    np.testing.assert_allclose(out, _numpy_attention(q, k, v, bias), atol=1e-5)


@pytest.mark.skipif(not ON_JAX, reason="JAX's dot_product_attention")
@pytest.mark.parametrize("rows", [5, 1])  # every query row, and the [CLS] row alone (`output_range=1`)
def test_jax_xla_dot_product_attention_with_berts_bias_equals_our_attention(rows):
    import jax

    from keras_bert_impl.backends import jax_ops

    q, k, v, bias = _inputs(rows)
    ours = backends.attention(q, k, v, bias)
    xla = jax_ops.dot_product_attention(q, k, v, bias, implementation="xla")
    assert xla.shape == (2, rows, 2, 8)
    np.testing.assert_allclose(np.asarray(xla), np.asarray(ours), atol=1e-5)
    # The gradients with respect to the queries, keys and values agree too (the bias's is stopped).
    grad = jax.grad(lambda qkv, f: (f(*qkv) * v[:, :rows]).sum(), argnums=0)
    ours_grads = grad((q, k, v), lambda q, k, v: backends.attention(q, k, v, bias))
    xla_grads = grad((q, k, v), lambda q, k, v: jax_ops.dot_product_attention(q, k, v, bias, "xla"))
    for a, b in zip(ours_grads, xla_grads):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-5)


@pytest.mark.skipif(not ON_JAX, reason="JAX's cuDNN path")
def test_attention_on_jax_takes_the_cudnn_path_where_it_applies_and_only_without_dropout(monkeypatch):
    from keras_bert_impl.backends import jax_ops

    calls, xla = [], jax_ops.dot_product_attention
    monkeypatch.setattr(jax_ops, "cudnn_attention_applies", lambda q: True)  # as on a CUDA GPU in bfloat16
    monkeypatch.setattr(jax_ops, "dot_product_attention",
                        lambda q, k, v, bias, implementation: calls.append(implementation) or xla(q, k, v, bias, "xla"))
    q, k, v, bias = _inputs()
    out = backends.attention(q, k, v, bias)
    assert calls == ["cudnn"]
    np.testing.assert_allclose(np.asarray(out), _numpy_attention(q, k, v, bias), atol=1e-5)
    dropout = keras.layers.Dropout(0.1)
    backends.attention(q, k, v, bias, dropout=dropout, training=True)  # jax.nn's attention takes no dropout
    assert calls == ["cudnn"]
