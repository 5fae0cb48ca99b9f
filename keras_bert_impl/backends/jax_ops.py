"""The JAX backend's fast paths: a bfloat16 einsum with a float32 result, the exact GELU in its erf form,
attention probabilities kept out of the next dot's fusion, cuDNN's fused attention on an NVIDIA GPU, dropout's
random bits from the original threefry on one CPU process, and whether JAX computes on its CPU.

JAX by nature: `keras_bert_impl.backends` imports this module only when KERAS_BACKEND is jax.
"""

import math

import jax
import jax.numpy as jnp


def einsum_float32_result(equation, x, kernel):
    """`einsum(equation, x, kernel)` of bfloat16 operands, accumulated and returned in float32.

    `keras.ops.einsum` has no `preferred_element_type`; XLA's CPU dot runs at bfloat16 speed only when asked
    for a float32 result (docs/performance.md, bf16).
    """
    return jnp.einsum(equation, x, kernel, preferred_element_type=jnp.float32)


def gelu(x):
    """Exact GELU as x * (1 + erf(x / sqrt(2))) / 2, the form of TensorFlow's and PyTorch's exact GELU.

    `keras.activations.gelu(approximate=False)` calls `jax.nn.gelu`, which computes x * erfc(-x / sqrt(2)) / 2;
    XLA's CPU erfc is a long expansion with an exponential and divides, slower than the erf form forward and
    backward (docs/performance.md); both are within 1.2e-6 of float64 for |x| up to 12.
    """
    return 0.5 * x * (1.0 + jax.lax.erf(x * (1.0 / math.sqrt(2.0))))


def on_cpu():
    """Whether JAX computes on its CPU backend (no GPU or TPU)."""
    return jax.default_backend() == "cpu"


def cudnn_attention_applies(q):
    """Whether `dot_product_attention(..., implementation="cudnn")` computes attention of queries `q`
    [B, R, A, d]: JAX on a CUDA GPU of compute capability 8.0 or later, q in bfloat16 or float16 (cuDNN's fused
    attention takes no float32), d a multiple of 8 up to 128."""
    if jax.default_backend() != "gpu" or q.dtype not in (jnp.bfloat16, jnp.float16):
        return False
    if q.shape[-1] % 8 != 0 or q.shape[-1] > 128:
        return False
    try:  # "9.0" on an H100; ROCm devices name their architecture ("gfx90a") or have no such attribute
        return float(getattr(jax.devices()[0], "compute_capability", "0")) >= 8.0
    except ValueError:
        return False


def dot_product_attention(q, k, v, bias, implementation):
    """softmax(q k^T / sqrt(d) + bias) v by `jax.nn.dot_product_attention` with `implementation` ("cudnn": one
    fused cuDNN kernel; "xla": XLA's composition): the context [B, R, A, d] of q [B, R, A, d], k, v [B, T, A, d]
    and an additive bias broadcastable to [B, A, R, T] (BERT's padding bias is [B, 1, 1, T]).

    cuDNN takes a bias of the full [R, T] in its last two axes, so the bias is broadcast to [B, 1 or A, R, T].
    The bias is a constant of the padding mask: its gradient is stopped (cuDNN computes one for any bias).
    """
    bias = jax.lax.stop_gradient(bias)
    bias = jnp.broadcast_to(bias, (bias.shape[0], bias.shape[1], q.shape[1], k.shape[1]))  # [B, 1 or A, R, T]
    return jax.nn.dot_product_attention(q, k, v, bias=bias, implementation=implementation)  # [B, R, A, d]


def unfused(probs):
    """`probs` unchanged (a select keeping every value >= 0: all of a softmax's), as a separate array.

    Without it XLA's CPU compiler fuses the logits' dot, the softmax and the dot with the values into one
    fusion, which runs slower than the three apart (docs/performance.md, Attention; a
    `jax.lax.optimization_barrier` instead of the select was slower too).
    """
    return jnp.where(probs >= 0, probs, 0.0)


def draws_faster_unpartitioned():
    """Whether `unpartitioned_threefry` applies: JAX on its CPU in a single process, no Keras distribution.

    Sharded arrays (a `keras.distribution`, several processes) keep JAX's partitionable threefry, which each
    device computes for its own shard only.
    """
    import keras

    return on_cpu() and jax.process_count() == 1 and keras.distribution.distribution() is None


def unpartitioned_threefry():
    """A context in which `jax.random` draws bits with the original threefry layout instead of the
    partitionable one (`jax_threefry_partitionable`, JAX's default).

    Both are threefry-2x32 in counter mode, uniform over every 32-bit word: a dropout mask drawn under
    either keeps each value with the same probability (Keras' `uniform < 1 - rate`), from a different stream
    of the same generator. The original layout is several times cheaper on the CPU
    (`benchmarks/jax_dropout_bits.py`, docs/performance.md). JAX's partitionable layout exists so that a
    sharded array's bits are computed per shard; the original one computes them whole
    (`draws_faster_unpartitioned` says where it is used).
    """
    return jax.threefry_partitionable(False)
