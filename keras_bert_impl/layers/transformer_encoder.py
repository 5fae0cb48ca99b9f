"""BertEncoderBlock: one post-LN Transformer encoder block of BERT."""

import keras

from keras_bert_impl import backends
from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.attention import BertSelfAttention
from keras_bert_impl.layers.initializers import truncated_normal
from keras_bert_impl.layers.dense import BertDense
from keras_bert_impl.layers.dropout import BertDropout, dropout_in_training
from keras_bert_impl.layers.layer_arguments import arguments_config, keep_arguments


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEncoderBlock(keras.layers.Layer):
    """A post-LayerNorm Transformer encoder block (modeling.py's `transformer_model`, one layer).

        a = LayerNorm(x + Dropout(SelfAttention(x, bias)))
        y = LayerNorm(a + Dropout(Dense_out(act(Dense_intermediate(a)))))

    Args:
        hidden_size: Model width H.
        num_heads: Number of attention heads.
        intermediate_size: Width of the feed-forward layer.
        hidden_act: Activation name (see `keras_bert_impl.config.SUPPORTED_ACTIVATIONS`).
        dropout: Dropout rate on the sub-layer outputs.
        attention_dropout: Dropout rate on the attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: Standard deviation of the truncated-normal kernel initializer.

    Call arguments:
        hidden_states: float tensor [batch, seq, H].
        attention_bias: additive bias broadcastable to [batch, heads, seq, seq].
        output_range: optional int n: compute the block's output only for the first n positions (they
            still attend to the whole sequence); the output is then [batch, n, H] and equals the first n
            rows of the full output. With n = 1 the last block of a [CLS] classifier skips the queries,
            attention output and feed-forward of every other token.
        split_at: optional int n: the output as two tensors, the first n rows [batch, n, H] and the
            others [batch, seq - n, H] (the attention's keys and values computed once): in a compiled graph
            a part nobody reads is not computed, and in training a part the loss does not read gets no
            backward pass. On torch outside training (eager: both parts would be computed anyway) the
            block runs once and its output is sliced in two.

    Returns:
        float tensor [batch, seq, H] (or [batch, output_range, H], or the two parts of `split_at`).

    Examples:

    >>> from keras_bert_impl.layers.attention import attention_bias_from_padding_mask
    >>> block = BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=32)
    >>> x = keras.ops.ones((2, 5, 8))
    >>> tuple(block(x, attention_bias_from_padding_mask(keras.ops.ones((2, 5)))).shape)
    (2, 5, 8)
    """

    def __init__(self, hidden_size, num_heads, intermediate_size, hidden_act="gelu", dropout=0.0, attention_dropout=0.0,
                 layer_norm_eps=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        keep_arguments(self, hidden_size=hidden_size, num_heads=num_heads, intermediate_size=intermediate_size,
                       hidden_act=hidden_act, dropout=dropout, attention_dropout=attention_dropout,
                       layer_norm_eps=layer_norm_eps, initializer_range=initializer_range)

        init = truncated_normal(initializer_range)
        policy = self.dtype_policy
        self.attention = BertSelfAttention(
            hidden_size, num_heads, attention_dropout, initializer_range, dtype=policy, name="attention"
        )
        self.attention_dropout_layer = BertDropout(dropout, dtype=policy, name="attention_output_dropout")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=policy, name="attention_layer_norm"
        )
        self.intermediate_dense = BertDense(
            intermediate_size,
            activation=get_activation(hidden_act),
            kernel_initializer=init,
            dtype=policy,
            name="intermediate_dense",
        )
        self.output_dense = BertDense(hidden_size, kernel_initializer=init, dtype=policy, name="output_dense")
        self.output_dropout = BertDropout(dropout, dtype=policy, name="output_dropout")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=policy, name="output_layer_norm"
        )

    def build(self, hidden_states_shape, attention_bias_shape=None):
        hidden_states_shape = tuple(hidden_states_shape)
        self.attention.build(hidden_states_shape)
        self.attention_layer_norm.build(hidden_states_shape)
        self.intermediate_dense.build(hidden_states_shape)
        self.output_dense.build(hidden_states_shape[:-1] + (self.intermediate_size,))
        self.output_layer_norm.build(hidden_states_shape)
        self.built = True

    def call(self, hidden_states, attention_bias, training=None, output_range=None, split_at=None):
        if split_at is not None and backends.computes_whole_then_splits(training):
            whole = self.call(hidden_states, attention_bias, training=training)  # [B, T, H]
            return [whole[:, :split_at], whole[:, split_at:]]
        if split_at is not None:
            first, rest = self.attention(hidden_states, attention_bias, training=training, split_at=split_at)
            # The residuals [B, n, H], [B, T - n, H]: the split the attention made of the same input, which
            # TensorFlow's graph optimizer and XLA compute once (one SplitV per step in tf.profiler), and
            # torch as views.
            first_rows, other_rows = backends.split_rows(hidden_states, split_at)
            return [self._feed_forward(first_rows, first, training),
                    self._feed_forward(other_rows, rest, training)]
        attention_output = self.attention(hidden_states, attention_bias, training=training, output_range=output_range)
        residual = hidden_states if output_range is None else hidden_states[:, :output_range]
        return self._feed_forward(residual, attention_output, training)

    def _feed_forward(self, residual, attention_output, training):
        """The block's output [B, R, H] from the rows' input `residual` and their attention output."""
        attention_output = dropout_in_training(self.attention_dropout_layer, attention_output, training)
        attention_output = self.attention_layer_norm(residual + attention_output)

        intermediate = self.intermediate_dense(attention_output)
        layer_output = self.output_dense(intermediate)
        layer_output = dropout_in_training(self.output_dropout, layer_output, training)
        return self.output_layer_norm(attention_output + layer_output)

    def compute_output_spec(self, hidden_states, attention_bias, training=None, output_range=None, split_at=None):
        return self.attention.compute_output_spec(hidden_states, attention_bias, output_range=output_range,
                                                  split_at=split_at)

    def get_config(self):
        return arguments_config(self, super().get_config())
