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


def inference(model, inputs, training=False):
    """`model(inputs, training=training)` as numpy, its nested structure kept. Under JAX through one jitted
    stateless call: eager JAX compiles each operation on its own (a BiLSTM tagger's forward took ~5 s)."""
    if keras.backend.backend() == "jax":
        import jax

        variables = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
        outputs = jax.jit(lambda t, n, x: model.stateless_call(t, n, x, training=training)[0])(*variables, inputs)
    else:
        outputs = model(inputs, training=training)
    return keras.tree.map_structure(to_numpy, outputs)


def compiled_gradient_hlo(model, inputs):
    """The optimized XLA HLO text of the gradient of `sum(model(inputs, training=True))` with respect to the
    trainable variables (JAX: `jax.jit`; TensorFlow: `tf.function(jit_compile=True)`): what XLA keeps after
    removing the computations no output needs. Torch has no such compiled graph: NotImplementedError."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        non_trainable = [v.value for v in model.non_trainable_variables]

        def loss(trainable_values):
            outputs, _ = model.stateless_call(trainable_values, non_trainable, inputs, training=True)
            return jax.numpy.sum(outputs)

        return jax.jit(jax.grad(loss)).lower([v.value for v in model.trainable_variables]).compile().as_text()
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function(jit_compile=True)
        def gradients(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(x, training=True))
            return [g for g in tape.gradient(loss, model.trainable_variables) if g is not None]

        return gradients.experimental_get_compiler_ir(inputs)(stage="optimized_hlo")
    raise NotImplementedError(f"no compiled graph on the {backend} backend")


def value_and_input_gradients(function, inputs, upstream, differentiated):
    """`function(*inputs)` and the gradients of sum(function(*inputs) * upstream) with respect to the inputs
    at the indices `differentiated`, through the backend's autodiff, as numpy (the other inputs are
    constants; on torch the call records the gradient, as a training step's)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(a) for a in inputs]
        with tf.GradientTape() as tape:
            tape.watch([tensors[i] for i in differentiated])
            value = function(*tensors)
            loss = tf.reduce_sum(value * upstream)
        grads = tape.gradient(loss, [tensors[i] for i in differentiated])
    elif backend == "jax":
        import jax

        def loss(chosen):
            values = list(inputs)
            for i, value in zip(differentiated, chosen):
                values[i] = value
            output = function(*values)
            return (output * upstream).sum(), output

        grads, value = jax.grad(loss, has_aux=True)([inputs[i] for i in differentiated])
    elif backend == "torch":
        import torch

        tensors = [torch.tensor(a, requires_grad=i in differentiated) for i, a in enumerate(inputs)]
        value = function(*tensors)
        (value * torch.tensor(upstream)).sum().backward()
        value, grads = value.detach(), [tensors[i].grad for i in differentiated]
    else:
        raise NotImplementedError(backend)
    return to_numpy(value), [to_numpy(g) for g in grads]
