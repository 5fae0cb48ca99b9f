"""SentencePooling: token vectors -> one sentence vector, as sentence-transformers' `Pooling` module."""

import keras
from keras import ops


# The pooling modes, by sentence-transformers' names.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens")


def pooling_modes(modes):
    """`modes` (a mode or a sequence of modes) as a tuple of known, distinct modes; ValueError otherwise.

    Examples:

    >>> pooling_modes("mean"), pooling_modes(["cls", "max"])
    (('mean',), ('cls', 'max'))
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [mode for mode in modes if mode not in POOLING_MODES]
    if not modes or unknown or len(set(modes)) != len(modes):
        raise ValueError(f"pooling must be one of {', '.join(POOLING_MODES)}, or a list of distinct ones; got "
                         f"{modes!r}.")
    return modes


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class SentencePooling(keras.layers.Layer):
    """Pools the token vectors of each sequence into one vector, with sentence-transformers' rules for
    padding (`padding_mask` 0):

        mean                  sum of the real tokens' vectors / max(their count, 1e-9)
        mean_sqrt_len_tokens  sum of the real tokens' vectors / sqrt(max(their count, 1e-9))
        max                   elementwise maximum over the real tokens (padding counts as -inf)
        cls                   the vector of the first real token ([CLS]; no pooler dense layer)

    Several modes are concatenated in the order given ([batch, len(modes) * H]). The sums run in float32
    (as sentence-transformers accumulates half-precision inputs) and the output is float32; the layer's
    dtype policy is float32 whatever the model's.

    Args:
        modes: a mode or a list of modes (`POOLING_MODES`).

    Call arguments:
        sequence: float [batch, seq, H], the token vectors.
        padding_mask: int or bool [batch, seq], 1 for real tokens.

    Returns:
        float32 [batch, len(modes) * H].

    Examples:

    >>> pooling = SentencePooling(["mean", "max", "cls"])
    >>> sequence = keras.ops.convert_to_tensor([[[1.0, 2.0], [3.0, -4.0], [9.0, 9.0]]])  # [1, 3, 2]
    >>> mask = keras.ops.convert_to_tensor([[1, 1, 0]])  # the third token is padding
    >>> keras.ops.convert_to_numpy(pooling(sequence, mask)).tolist()
    [[2.0, -1.0, 3.0, 2.0, 1.0, 2.0]]
    """

    def __init__(self, modes="mean", **kwargs):
        kwargs["dtype"] = "float32"  # pools (and sums) in float32 under every policy
        super().__init__(**kwargs)
        self.modes = pooling_modes(modes)

    def call(self, sequence, padding_mask):
        sequence = ops.cast(sequence, "float32")  # [B, T, H]
        mask = ops.cast(padding_mask, "float32")  # [B, T]
        weights = ops.expand_dims(mask, -1)  # [B, T, 1]
        outputs = []
        for mode in self.modes:
            if mode == "cls":
                first = ops.argmax(ops.cast(padding_mask, "int32"), axis=1)  # [B], the first real token
                index = ops.reshape(ops.cast(first, "int32"), (-1, 1, 1))  # [B, 1, 1]
                outputs.append(ops.take_along_axis(sequence, index, axis=1)[:, 0, :])  # [B, H]
            elif mode == "max":
                # Padding at -inf, as sentence-transformers: a text of padding only gets -inf.
                masked = ops.where(weights > 0, sequence, ops.full_like(sequence, float("-inf")))
                outputs.append(ops.max(masked, axis=1))  # [B, H]
            else:
                total = ops.sum(sequence * weights, axis=1)  # [B, H]
                count = ops.maximum(ops.sum(weights, axis=1), 1e-9)  # [B, 1]
                outputs.append(total / (count if mode == "mean" else ops.sqrt(count)))  # [B, H]
        return outputs[0] if len(outputs) == 1 else ops.concatenate(outputs, axis=-1)

    def compute_output_shape(self, sequence_shape, padding_mask_shape=None):
        hidden = sequence_shape[-1]
        return (sequence_shape[0], None if hidden is None else hidden * len(self.modes))

    def get_config(self):
        config = super().get_config()
        config.pop("dtype", None)
        config["modes"] = list(self.modes)
        return config
