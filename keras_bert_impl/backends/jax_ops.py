"""The JAX backend's fast paths: a bfloat16 einsum with a float32 result, the exact GELU in its erf form,
attention probabilities kept out of the next dot's fusion, dropout's random bits from the original threefry
on one CPU process, and whether JAX computes on its CPU.

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
