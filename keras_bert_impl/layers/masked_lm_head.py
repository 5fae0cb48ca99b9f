"""MaskedLMHead: BERT's masked-LM output layer, evaluated only at the masked positions."""

import keras
from keras import ops

from keras_bert_impl import backends
from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.dense import BertDense
from keras_bert_impl.layers.initializers import truncated_normal
from keras_bert_impl.layers.layer_arguments import arguments_config, keep_arguments


def _embedding_matrix(embedding, dtype):
    """The [vocab, H] matrix of an `Embedding` layer in `dtype`; after `quantize("int8")`, de-quantized
    as Keras' int8 Embedding does for the rows it looks up (int8 rows divided by their per-row scale)."""
    matrix = embedding.embeddings
    if embedding.quantization_mode == "int8":
        matrix = ops.divide(ops.cast(matrix, "float32"), ops.expand_dims(embedding.embeddings_scale, -1))
    return ops.cast(matrix, dtype)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class MaskedLMHead(keras.layers.Layer):
    """Masked-LM head of modeling.py's `get_masked_lm_output`, at the gathered positions only.

        h = LayerNorm(act(Dense_H(sequence_output[masked_positions])))
        logits = h @ word_embeddings^T + output_bias

    The vocabulary projection is tied to the backbone's word-embedding matrix, and it is computed only
    for the `max_predictions_per_seq` masked positions, not for every token: the [H, vocab] matmul is the
    most expensive op of pretraining otherwise.

    Args:
        token_embedding: the word-embedding layer whose matrix is the output projection (in
            `BertPretrainer`, `backbone.token_embedding`, so the projection is tied to the backbone's
            embeddings). None: the head owns an `Embedding(vocab_size, hidden_size)` for it. The layer
            itself is not in the config: a head revived from its config owns its embedding, and a model
            that ties them (BertPretrainer) passes the layer again when it is rebuilt.
        hidden_act: activation name of the transform (the backbone's `hidden_act`).
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: Standard deviation of the truncated-normal initializer.
        vocab_size: the vocabulary size; read from `token_embedding` when that is given.
        hidden_size: the hidden size H; read from `token_embedding` when that is given.

    Call arguments:
        sequence_output: float tensor [batch, seq, H].
        masked_positions: int tensor [batch, num_predictions], positions to predict; None: every
            position (a left-to-right LM predicts the next token at each one).

    Returns:
        float32 logits [batch, num_predictions, vocab_size] ([batch, seq, vocab_size] without positions).

    Examples:

    >>> embedding = keras.layers.Embedding(100, 8)
    >>> embedding.build((None,))
    >>> head = MaskedLMHead(embedding)
    >>> logits = head(keras.ops.ones((2, 5, 8)), keras.ops.array([[1, 2], [0, 4]]))
    >>> tuple(logits.shape)
    (2, 2, 100)
    >>> revived = MaskedLMHead.from_config(head.get_config())
    >>> tuple(revived(keras.ops.ones((2, 5, 8)), keras.ops.array([[1, 2], [0, 4]])).shape)
    (2, 2, 100)
    """

    def __init__(
        self,
        token_embedding=None,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        vocab_size=None,
        hidden_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if token_embedding is None:
            if vocab_size is None or hidden_size is None:
                raise ValueError("MaskedLMHead needs token_embedding, or vocab_size and hidden_size.")
            token_embedding = keras.layers.Embedding(
                int(vocab_size),
                int(hidden_size),
                embeddings_initializer=truncated_normal(initializer_range),
                dtype=self.dtype_policy,
                name="token_embedding",
            )
        for name, given, found in (("vocab_size", vocab_size, token_embedding.input_dim),
                                   ("hidden_size", hidden_size, token_embedding.output_dim)):
            if given is not None and int(given) != found:
                raise ValueError(f"MaskedLMHead: {name}={given} but the token embedding has {found}.")
        self.token_embedding = token_embedding
        keep_arguments(self, hidden_act=hidden_act, layer_norm_eps=layer_norm_eps, initializer_range=initializer_range,
                       vocab_size=token_embedding.input_dim, hidden_size=token_embedding.output_dim)
        self.transform_dense = BertDense(
            self.hidden_size,
            activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="transform_layer_norm"
        )

    def build(self, sequence_output_shape, masked_positions_shape=None):
        if not self.token_embedding.built:
            self.token_embedding.build((None,))
        self.transform_dense.build((None, None, self.hidden_size))
        self.transform_layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, sequence_output, masked_positions=None):
        if masked_positions is None:
            x = sequence_output  # [batch, seq, H]: every position
        else:
            # [batch, seq, H] gathered at [batch, P] -> [batch, P, H]
            positions = ops.expand_dims(ops.cast(masked_positions, "int32"), -1)
            x = ops.take_along_axis(sequence_output, positions, axis=1)
        x = self.transform_layer_norm(self.transform_dense(x))
        embeddings = _embedding_matrix(self.token_embedding, x.dtype)  # [vocab, H]
        logits = backends.dense_transposed(x, embeddings)  # [batch, P, vocab]
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape=None):
        if masked_positions_shape is None:
            return tuple(sequence_output_shape[:-1]) + (self.vocab_size,)
        return tuple(masked_positions_shape) + (self.vocab_size,)

    def compute_output_spec(self, sequence_output, masked_positions=None):
        positions_shape = None if masked_positions is None else masked_positions.shape
        return keras.KerasTensor(self.compute_output_shape(sequence_output.shape, positions_shape), "float32")

    def get_config(self):
        return arguments_config(self, super().get_config())
