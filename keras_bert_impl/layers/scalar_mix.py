"""ScalarMix: a learned softmax-weighted sum of layer outputs (ELMo; the paper's Table 7 "weighted sum")."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class ScalarMix(keras.layers.Layer):
    """`gamma * sum_k softmax(w)_k * h_k` over a list of same-shaped tensors `h_k` (as allennlp's ScalarMix).

    The weight logits `w` (one per input, `scalar_parameters`) start at 0, so an untrained mix is the mean
    of its inputs (times `gamma`, which starts at 1). Both are trained with the model that holds the layer.
    The sum runs in float32 and returns float32.

    Args:
        initial_scalar_parameters: the starting logits `w`, one per input; default all 0 (the mean).
        initial_gamma: the starting scale `gamma` (1.0).

    Call arguments:
        inputs: a list of n tensors of one shape, e.g. n x [batch, seq, H].

    Returns:
        One tensor of that shape ([batch, seq, H]), float32.

    Examples:

    >>> mix = ScalarMix()
    >>> h = [keras.ops.ones((2, 3, 4)), 3.0 * keras.ops.ones((2, 3, 4))]
    >>> keras.ops.convert_to_numpy(mix(h))[0, 0].tolist()  # the mean at the start
    [2.0, 2.0, 2.0, 2.0]
    >>> one_hot = ScalarMix(initial_scalar_parameters=[-1e9, 0.0])  # selects the second input exactly
    >>> keras.ops.convert_to_numpy(one_hot(h))[0, 0].tolist()
    [3.0, 3.0, 3.0, 3.0]
    """

    def __init__(self, initial_scalar_parameters=None, initial_gamma=1.0, **kwargs):
        super().__init__(**kwargs)
        self.initial_scalar_parameters = (
            None if initial_scalar_parameters is None else [float(w) for w in initial_scalar_parameters]
        )
        self.initial_gamma = float(initial_gamma)

    def build(self, input_shape):
        num_inputs = len(input_shape)
        if num_inputs < 1:
            raise ValueError("ScalarMix needs a list of at least one tensor.")
        initial = self.initial_scalar_parameters
        if initial is not None and len(initial) != num_inputs:
            raise ValueError(f"ScalarMix: initial_scalar_parameters has {len(initial)} values for {num_inputs} inputs.")
        self.scalar_parameters = self.add_weight(
            name="scalar_parameters",
            shape=(num_inputs,),
            initializer="zeros" if initial is None else keras.initializers.Constant(initial),
            dtype="float32",
        )
        self.gamma = self.add_weight(
            name="gamma", shape=(), initializer=keras.initializers.Constant(self.initial_gamma), dtype="float32"
        )

    def call(self, inputs):
        weights = ops.softmax(ops.cast(self.scalar_parameters, "float32"), axis=-1)  # [n]
        mixed = weights[0] * ops.cast(inputs[0], "float32")  # [batch, seq, H]
        for k in range(1, len(inputs)):
            mixed = mixed + weights[k] * ops.cast(inputs[k], "float32")
        return ops.cast(self.gamma, "float32") * mixed

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs[0].shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({"initial_scalar_parameters": self.initial_scalar_parameters, "initial_gamma": self.initial_gamma})
        return config
