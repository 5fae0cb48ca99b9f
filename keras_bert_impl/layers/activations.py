"""The hidden activations of BERT checkpoints, by the names their config files use."""

import keras


def gelu(x):
    """Exact GELU, x * Phi(x) with the erf form: what Hugging Face's "gelu" computes.

    On JAX, `backends/jax_ops.gelu` computes the same erf form; Keras' GELU there is JAX's erfc form, which
    XLA's CPU computes 2.5x slower forward and 1.3x slower backward. On TensorFlow, `backends/tf_ops.gelu`
    computes it with its derivative written out instead of derived op by op through erfc.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        return jax_ops.gelu(x)
    if backend == "tensorflow":
        from keras_bert_impl.backends import tf_ops

        return tf_ops.gelu(x)
    return keras.activations.gelu(x, approximate=False)


def gelu_approximate(x):
    """Tanh-approximate GELU: what google-research/bert's modeling.py computes (HF's "gelu_new")."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_new": gelu_approximate,
    "gelu_approximate": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
}


def get_activation(name):
    """The activation function for a `hidden_act` name of `BertConfig.SUPPORTED_ACTIVATIONS`."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"Unknown hidden_act {name!r}; allowed: {', '.join(_ACTIVATIONS)}.")
    return _ACTIVATIONS[name]
