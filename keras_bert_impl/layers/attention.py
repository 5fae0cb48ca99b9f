"""Multi-head self-attention of BERT, and the additive attention mask built from a padding mask.

Written here rather than taken from keras.layers.MultiHeadAttention because that layer leaves the fused
`keras.ops.dot_product_attention` path whenever a dropout rate is configured, even at inference, and
masks with a boolean mask instead of BERT's finite additive bias.
"""

import keras
from keras import ops

from keras_bert_impl import backends
from keras_bert_impl.layers.dense import BertEinsumDense
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.initializers import truncated_normal
from keras_bert_impl.layers.layer_arguments import arguments_config, keep_arguments

# The original modeling.py adds -10000.0 to the logits of padded keys: finite, so a row whose keys are all
# padding gives a uniform distribution instead of NaN, and representable in float16.
MASK_BIAS = -10000.0


def attention_bias_from_padding_mask(padding_mask, dtype="float32"):
    """Additive attention bias [batch, 1, 1, seq] from a padding mask [batch, seq] (1 = real token).

    Real tokens get 0, padding gets `MASK_BIAS`; it broadcasts over heads and query positions.
    """
    mask = ops.cast(padding_mask, dtype)
    bias = (1.0 - mask) * MASK_BIAS
    return ops.expand_dims(ops.expand_dims(bias, 1), 1)


def causal_attention_bias(padding_mask, dtype="float32"):
    """Additive attention bias [batch, 1, seq, seq] of a causal (left-to-right) model, from a padding mask.

    Query position t may attend to key position s <= t only: keys after t get `MASK_BIAS`, as do padded
    keys, and the two add up where both hold (the row's softmax is the same: exp(-10000) is 0 in float32).
    transformers' extended attention mask for `is_decoder=True` masks the same keys. Query rows broadcast
    over heads.

    Examples:

    >>> bias = causal_attention_bias(keras.ops.array([[1, 1, 0]]))  # [1, 1, 3, 3]
    >>> (keras.ops.convert_to_numpy(bias)[0, 0] / MASK_BIAS).tolist()  # rows: queries; 2 = later and padded
    [[0.0, 1.0, 2.0], [0.0, 0.0, 2.0], [0.0, 0.0, 1.0]]
    """
    padding_bias = attention_bias_from_padding_mask(padding_mask, dtype)  # [batch, 1, 1, seq]
    # Positions 0..seq-1 from the mask itself (no static length needed in a functional graph).
    positions = ops.cumsum(ops.ones_like(padding_mask, dtype="int32"), axis=1) - 1  # [batch, seq]
    later = ops.greater(ops.expand_dims(positions, 1), ops.expand_dims(positions, 2))  # [batch, t, s]: s > t
    return padding_bias + ops.expand_dims(ops.cast(later, dtype), 1) * MASK_BIAS  # [batch, 1, seq, seq]


def _rows_output_spec(shape, dtype, output_range=None, split_at=None):
    """The KerasTensor(s) of a layer whose output keeps its input's [batch, seq, H] shape, or the rows
    `output_range` / `split_at` select (see `BertSelfAttention`)."""
    batch, seq, width = shape
    if split_at is not None:
        rest = None if seq is None else seq - split_at
        return [keras.KerasTensor((batch, split_at, width), dtype=dtype),
                keras.KerasTensor((batch, rest, width), dtype=dtype)]
    return keras.KerasTensor((batch, seq if output_range is None else output_range, width), dtype=dtype)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention with BERT's query/key/value/output projections.

    The attention itself is `backends.attention`: the fused `keras.ops.dot_product_attention` whenever no
    dropout is applied to the attention probabilities (inference, or `dropout=0`) and the backend has a fused
    kernel (torch; JAX off its CPU), and torch's fused kernel with its dropout in training on a CUDA GPU;
    else softmax((Q / sqrt(d)) K^T + bias), dropout in training, then the product with V: the math of
    modeling.py, which scales the product instead of the queries.

    Args:
        hidden_size: Model width H.
        num_heads: Number of heads A (H must be divisible by A).
        dropout: Dropout rate on the attention probabilities.
        initializer_range: Standard deviation of the truncated-normal kernel initializer.

    Call arguments:
        hidden_states: float tensor [batch, seq, H].
        attention_bias: float tensor broadcastable to [batch, heads, seq, seq], e.g. from
            `attention_bias_from_padding_mask` ([batch, 1, 1, seq]) or `causal_attention_bias`
            ([batch, 1, seq, seq]). With `output_range` n, a bias with one row per query is read at its
            first n rows.
        output_range: optional int n: only the first n positions query (keys and values still span the
            whole sequence), so the output is [batch, n, H]. Model Garden's name for it; `BertBackbone`
            uses n = 1 in the last layer when only the [CLS] summary is read (see `pooled_output`).
        split_at: optional int n: the output as two tensors, the first n positions' [batch, n, H] and the
            others' [batch, seq - n, H], from keys and values computed once. In a compiled graph (XLA, a
            tf.function) a part nobody reads is not computed; see `BertBackbone`.

    Returns:
        float tensor [batch, seq, H] (or [batch, output_range, H], or the two parts of `split_at`), after
        the output projection, before residual and LayerNorm.

    Examples:

    >>> layer = BertSelfAttention(hidden_size=8, num_heads=2)
    >>> x = keras.ops.ones((2, 5, 8))
    >>> bias = attention_bias_from_padding_mask(keras.ops.ones((2, 5)))
    >>> tuple(layer(x, bias).shape)
    (2, 5, 8)
    """

    def __init__(self, hidden_size, num_heads, dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads != 0:
            raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}.")
        keep_arguments(self, hidden_size=hidden_size, num_heads=num_heads, dropout=dropout,
                       initializer_range=initializer_range)
        self.head_size = hidden_size // num_heads

        def projection(name):
            # [batch, seq, H] x [H, heads, head_size] -> [batch, seq, heads, head_size]
            return BertEinsumDense(
                "btd,dnh->btnh",
                output_shape=(None, num_heads, self.head_size),
                bias_axes="nh",
                kernel_initializer=truncated_normal(initializer_range),
                dtype=self.dtype_policy,
                name=name,
            )

        self.query = projection("query")
        self.key = projection("key")
        self.value = projection("value")
        # [batch, seq, heads, head_size] x [heads, head_size, H] -> [batch, seq, H]
        self.output_dense = BertEinsumDense(
            "btnh,nhd->btd",
            output_shape=(None, hidden_size),
            bias_axes="d",
            kernel_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="attention_output",
        )
        self.probs_dropout = BertDropout(dropout, dtype=self.dtype_policy, name="attention_probs_dropout")

    def build(self, hidden_states_shape, attention_bias_shape=None):
        for layer in (self.query, self.key, self.value):
            layer.build(hidden_states_shape)
        self.output_dense.build(tuple(hidden_states_shape[:2]) + (self.num_heads, self.head_size))
        self.built = True

    def call(self, hidden_states, attention_bias, training=None, output_range=None, split_at=None):
        # T: sequence length.
        k = self.key(hidden_states)  # [B, T, A, d]
        v = self.value(hidden_states)  # [B, T, A, d]
        if split_at is not None:
            # One split rather than two slices: its gradient is one concatenation, where each slice's
            # is a zero-padded copy of the whole (TensorFlow).
            first, rest = backends.split_rows(hidden_states, split_at)  # [B, n, H], [B, T - n, H]
            return [self._attend(first, k, v, attention_bias, 0, split_at, training),
                    self._attend(rest, k, v, attention_bias, split_at, None, training)]
        queries = hidden_states if output_range is None else hidden_states[:, :output_range]
        return self._attend(queries, k, v, attention_bias, 0, output_range, training)

    def _attend(self, queries, k, v, attention_bias, start, stop, training):
        """The output [B, R, H] of the query positions start..stop-1 (R of them; stop None: to the end),
        whose input rows are `queries` [B, R, H]."""
        whole = start == 0 and stop is None
        q = self.query(queries)  # [B, R, A, d]
        bias = ops.cast(attention_bias, q.dtype)  # [B, 1, 1 or T, T]
        if not whole and attention_bias.shape[2] != 1:
            bias = bias[:, :, start:stop]  # [B, 1, R, T]: the rows of the queries computed
        dropout = self.probs_dropout if training and self.dropout > 0 else None
        context = backends.attention(q, k, v, bias, dropout=dropout, training=training)  # [B, R, A, d]
        return self.output_dense(context)  # [B, R, H]

    def compute_output_spec(self, hidden_states, attention_bias, training=None, output_range=None, split_at=None):
        return _rows_output_spec(hidden_states.shape, self.compute_dtype, output_range, split_at)

    def get_config(self):
        return arguments_config(self, super().get_config())
