"""Test helpers that need each backend's own autodiff (the only backend-specific code in the tests)."""

import keras
import numpy as np


def trainable_gradients(model, inputs, loss_fn):
    """Gradients of `loss_fn(model(inputs, training=True))` for every trainable variable, as numpy."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_fn(model(inputs, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
    elif backend == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]

        def compute(trainable_values):
            outputs, _ = model.stateless_call(trainable_values, non_trainable, inputs, training=True)
            return loss_fn(outputs)

        grads = jax.jit(jax.grad(compute))(trainable)  # one compilation, not one per operation
    elif backend == "torch":
        for v in model.trainable_variables:
            v.value.grad = None
        loss = loss_fn(model(inputs, training=True))
        loss.backward()
        grads = [v.value.grad for v in model.trainable_variables]
    else:
        raise NotImplementedError(backend)
    return [None if g is None else np.asarray(keras.ops.convert_to_numpy(g)) for g in grads]


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))
