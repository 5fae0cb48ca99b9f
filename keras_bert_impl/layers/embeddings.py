"""BertEmbeddings: token + segment + learned position embeddings, then LayerNorm and dropout."""

import keras
from keras import ops

from keras_bert_impl.layers.dropout import BertDropout, dropout_in_training
from keras_bert_impl.layers.initializers import truncated_normal
from keras_bert_impl.layers.layer_arguments import arguments_config, keep_arguments


class PositionEmbedding(keras.layers.Embedding):
    """`keras.layers.Embedding` of the learned positions, which `Model.quantize` leaves in float.

    The rows are read by index, not multiplied, so int8 would save [max_positions, H] bytes and nothing
    in time; as keras-hub's BERT, only the word and segment embeddings are quantized. `quantize` raises
    the `NotImplementedError` by which `keras.Model.quantize` skips a layer (with a warning).

    Examples:

    >>> layer = PositionEmbedding(16, 4)
    >>> tuple(layer(keras.ops.arange(3)).shape)
    (3, 4)
    """

    def quantize(self, mode=None, type_check=True, config=None):
        raise self._not_implemented_error(self.quantize, "Position embeddings are read by index and stay in float.")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEmbeddings(keras.layers.Layer):
    """The input embeddings of BERT (modeling.py's `embedding_lookup` + `embedding_postprocessor`).

    output = Dropout(LayerNorm(word_emb[token_ids] + segment_emb[segment_ids] + position_emb[0:T]))

    Args:
        vocab_size: Number of WordPiece ids.
        hidden_size: Embedding width H.
        max_position_embeddings: Number of learned positions; longer inputs raise `ValueError`.
        type_vocab_size: Number of segment ids.
        dropout: Dropout rate after the LayerNorm.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: Standard deviation of the truncated-normal initializer.

    Call arguments:
        token_ids: int tensor [batch, seq].
        segment_ids: int tensor [batch, seq].

    Returns:
        float tensor [batch, seq, hidden_size].

    Examples:

    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8, max_position_embeddings=16, type_vocab_size=2)
    >>> ids = keras.ops.ones((2, 5), dtype="int32")
    >>> tuple(layer(ids, keras.ops.zeros((2, 5), dtype="int32")).shape)
    (2, 5, 8)
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size, dropout=0.0,
                 layer_norm_eps=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        keep_arguments(self, vocab_size=vocab_size, hidden_size=hidden_size,
                       max_position_embeddings=max_position_embeddings, type_vocab_size=type_vocab_size,
                       dropout=dropout, layer_norm_eps=layer_norm_eps, initializer_range=initializer_range)

        init = truncated_normal(initializer_range)

        def embedding(input_dim, name, layer_class=keras.layers.Embedding):
            return layer_class(
                input_dim, hidden_size, embeddings_initializer=init, dtype=self.dtype_policy, name=name
            )

        self.word_embeddings = embedding(vocab_size, "word_embeddings")
        self.token_type_embeddings = embedding(type_vocab_size, "token_type_embeddings")
        self.position_embeddings = embedding(max_position_embeddings, "position_embeddings", PositionEmbedding)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="embeddings_layer_norm"
        )
        self.dropout_layer = BertDropout(dropout, dtype=self.dtype_policy, name="embeddings_dropout")

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.word_embeddings.build(token_ids_shape)
        self.token_type_embeddings.build(token_ids_shape)
        self.position_embeddings.build((None,))
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_size,))
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        seq_len = token_ids.shape[1]
        if isinstance(seq_len, int) and seq_len > self.max_position_embeddings:
            raise ValueError(
                f"Input sequence length {seq_len} exceeds max_position_embeddings="
                f"{self.max_position_embeddings} of this model; truncate the input (e.g. max_length="
                f"{self.max_position_embeddings} in the tokenizer)."
            )
        # [seq] -> [1, seq, H], broadcast over the batch.
        positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")
        x = self.word_embeddings(token_ids)
        x = x + self.token_type_embeddings(segment_ids)
        x = x + ops.expand_dims(self.position_embeddings(positions), 0)
        x = self.layer_norm(x)
        return dropout_in_training(self.dropout_layer, x, training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_size,)

    def get_config(self):
        return arguments_config(self, super().get_config())
