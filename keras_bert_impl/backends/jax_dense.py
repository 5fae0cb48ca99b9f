"""The JAX-backend fast path of `BertDense` / `BertEinsumDense`: a bfloat16 einsum with a float32 result.

JAX by nature: `layers/dense.py` imports this module only when KERAS_BACKEND is jax. `keras.ops.einsum`
has no `preferred_element_type`; XLA's CPU dot accumulates and returns float32 at bfloat16 speed when
asked for it (see `layers/dense.py` for the measurement).
"""

import jax.numpy as jnp


def einsum_float32_result(equation, x, kernel):
    """`einsum(equation, x, kernel)` of bfloat16 operands, accumulated and returned in float32."""
    return jnp.einsum(equation, x, kernel, preferred_element_type=jnp.float32)
