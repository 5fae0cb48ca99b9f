"""The hidden activations of BERT checkpoints, by the names their config files use."""

import keras

from keras_bert_impl import backends


def gelu(x):
    """Exact GELU, x * Phi(x) with the erf form: what Hugging Face's "gelu" computes (`backends.gelu`, the
    backend's fastest form of it)."""
    return backends.gelu(x)


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
