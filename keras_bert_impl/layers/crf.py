"""A linear-chain conditional random field (CRF) written with `keras.ops` only.

Conventions (those of `tf.contrib.crf` / TF-Addons):

* `potentials` [B, T, K] are the per-position tag scores (unary potentials, e.g. logits),
* `transitions[i, j]` is the score of moving from tag `i` at position t-1 to tag `j` at t,
* optional `start_transitions[j]` / `end_transitions[j]` score tag `j` at the first / last
  real position,
* `mask` [B, T] marks real positions; it must be a prefix of ones followed by zeros (right
  padding). Sequences of length 0 and 1 are allowed.

The score of a tag sequence `y` of length `L` is

    s(y) = start[y_0] + sum_{t<L} potentials[t, y_t] + sum_{0<t<L} transitions[y_{t-1}, y_t]
           + end[y_{L-1}]

and `log p(y) = s(y) - log sum_{y'} exp s(y')` over all K**L sequences (the forward algorithm).
For `L == 0` the only sequence is the empty one: its score, log-normaliser and log-likelihood
are 0.

The recurrences over time use `keras.ops.scan`, so the code traces under `jax.jit`,
`tf.function` (also with an unknown T) and runs eagerly on torch.
"""

import keras
from keras import ops


def _prepare(potentials, mask):
    potentials = ops.cast(ops.convert_to_tensor(potentials), "float32")
    if mask is None:
        mask = ops.ones(ops.shape(potentials)[:2], dtype="float32")
    mask = ops.cast(ops.convert_to_tensor(mask), "float32")
    return potentials, mask


def _time_major(x):
    """[B, T, ...] -> [T, B, ...]."""
    perm = [1, 0] + list(range(2, len(x.shape)))
    return ops.transpose(x, perm)


def _scan_inputs(potentials, mask):
    """Time-major [T, B, K + 2] scan inputs: unary scores, then the mask and a first-step flag.

    Every position (also the first) is one scan step, so the scan is never empty (T == 1 with
    an unknown T while tracing). One tensor rather than a tuple: Keras's TensorFlow `scan`
    cannot take several inputs when the number of steps is unknown while tracing.
    """
    first = ops.zeros_like(mask)
    first = ops.concatenate([ops.ones_like(first[:, :1]), first[:, 1:]], axis=1)
    steps = ops.concatenate([potentials, ops.expand_dims(mask, -1), ops.expand_dims(first, -1)], axis=-1)
    return _time_major(steps)


def _initial_scores(start_transitions):
    """Per-tag scores of the first position: its unary scores (+ start transitions)."""
    if start_transitions is None:
        return lambda unary: unary
    start = ops.expand_dims(ops.cast(start_transitions, "float32"), 0)
    return lambda unary: unary + start


def crf_sequence_score(potentials, tags, transitions, mask=None, start_transitions=None, end_transitions=None):
    """Unnormalised score `s(y)` of the given tag sequences.

    Args:
        potentials: float tensor [B, T, K] of unary scores.
        tags: int tensor [B, T]; values at padding positions are ignored (any value).
        transitions: float tensor [K, K], `transitions[i, j]` scores tag i followed by tag j.
        mask: [B, T] (bool/int/float) prefix mask of real positions; `None` means all real.
        start_transitions: optional float tensor [K] added for the first real tag.
        end_transitions: optional float tensor [K] added for the last real tag.

    Returns:
        float32 tensor [B].

    Examples:

    >>> potentials = keras.ops.zeros((1, 2, 2))
    >>> transitions = keras.ops.convert_to_tensor([[0.0, 1.0], [2.0, 3.0]])
    >>> float(crf_sequence_score(potentials, keras.ops.convert_to_tensor([[1, 0]]), transitions)[0])
    2.0
    """
    potentials, mask = _prepare(potentials, mask)
    transitions = ops.cast(transitions, "float32")
    num_tags = transitions.shape[0]
    tags = ops.clip(ops.cast(ops.convert_to_tensor(tags), "int32"), 0, num_tags - 1)

    unary = ops.take_along_axis(potentials, ops.expand_dims(tags, -1), axis=2)[..., 0]
    score = ops.sum(unary * mask, axis=1)

    flat_index = tags[:, :-1] * num_tags + tags[:, 1:]
    binary = ops.take(ops.reshape(transitions, (-1,)), flat_index, axis=0)
    score = score + ops.sum(binary * mask[:, 1:] * mask[:, :-1], axis=1)

    lengths = ops.cast(ops.sum(mask, axis=1), "int32")
    has_tokens = ops.cast(lengths > 0, "float32")
    if start_transitions is not None:
        start = ops.take(ops.cast(start_transitions, "float32"), tags[:, 0], axis=0)
        score = score + start * has_tokens
    if end_transitions is not None:
        last_index = ops.expand_dims(ops.maximum(lengths - 1, 0), -1)
        last_tags = ops.take_along_axis(tags, last_index, axis=1)[:, 0]
        score = score + ops.take(ops.cast(end_transitions, "float32"), last_tags, axis=0) * has_tokens
    return score


def crf_log_norm(potentials, transitions, mask=None, start_transitions=None, end_transitions=None):
    """Log-partition `log sum_y exp s(y)` by the forward algorithm (masked steps are skipped).

    Args:
        potentials: float tensor [B, T, K].
        transitions: float tensor [K, K].
        mask: [B, T] prefix mask; `None` means all positions are real.
        start_transitions: optional float tensor [K].
        end_transitions: optional float tensor [K].

    Returns:
        float32 tensor [B] (0 for empty sequences).

    Examples:

    >>> import math
    >>> z = crf_log_norm(keras.ops.zeros((1, 3, 2)), keras.ops.zeros((2, 2)))
    >>> round(float(z[0]), 5) == round(3 * math.log(2), 5)
    True
    """
    potentials, mask = _prepare(potentials, mask)
    transitions = ops.cast(transitions, "float32")
    num_tags = transitions.shape[0]
    initial = _initial_scores(start_transitions)

    def step(alpha, inputs):
        unary, step_mask, is_first = inputs[..., :num_tags], inputs[..., num_tags], inputs[..., num_tags + 1]
        scores = ops.expand_dims(alpha, 2) + ops.expand_dims(transitions, 0)
        new_alpha = ops.where(ops.expand_dims(is_first, 1) > 0, initial(unary), ops.logsumexp(scores, axis=1) + unary)
        new_alpha = ops.where(ops.expand_dims(step_mask, 1) > 0, new_alpha, alpha)
        return new_alpha, new_alpha

    alpha, _ = ops.scan(step, ops.zeros_like(potentials[:, 0]), _scan_inputs(potentials, mask))

    if end_transitions is not None:
        alpha = alpha + ops.cast(end_transitions, "float32")
    log_norm = ops.logsumexp(alpha, axis=1)
    return ops.where(mask[:, 0] > 0, log_norm, ops.zeros_like(log_norm))


def crf_log_likelihood(potentials, tags, transitions, mask=None, start_transitions=None, end_transitions=None):
    """Log-likelihood `log p(tags | potentials)` of a linear-chain CRF.

    Args:
        potentials: float tensor [B, T, K].
        tags: int tensor [B, T] (padding values ignored).
        transitions: float tensor [K, K].
        mask: [B, T] prefix mask; `None` means all positions are real.
        start_transitions: optional float tensor [K].
        end_transitions: optional float tensor [K].

    Returns:
        float32 tensor [B]; differentiable w.r.t. potentials and transitions.

    Examples:

    >>> import math
    >>> ll = crf_log_likelihood(keras.ops.zeros((1, 2, 3)), keras.ops.zeros((1, 2), "int32"),
    ...                         keras.ops.zeros((3, 3)))
    >>> round(float(ll[0]), 5) == round(-2 * math.log(3), 5)
    True
    """
    score = crf_sequence_score(potentials, tags, transitions, mask, start_transitions, end_transitions)
    log_norm = crf_log_norm(potentials, transitions, mask, start_transitions, end_transitions)
    return score - log_norm


def crf_viterbi_decode(potentials, transitions, mask=None, start_transitions=None, end_transitions=None):
    """Highest-scoring tag sequence (Viterbi) and its score; arguments as `crf_log_norm`'s.

    Returns:
        `(tags, best_score)`: int32 tensor [B, T] with tag 0 at padding positions, and the
        float32 score `s(tags)` [B] (0 for empty sequences).

    Examples:

    >>> potentials = keras.ops.convert_to_tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]])
    >>> tags, score = crf_viterbi_decode(potentials, keras.ops.zeros((2, 2)), mask=[[1, 1, 0]])
    >>> keras.ops.convert_to_numpy(tags).tolist(), float(score[0])
    ([[0, 1, 0]], 2.0)
    """
    potentials, mask = _prepare(potentials, mask)
    transitions = ops.cast(transitions, "float32")
    num_tags = transitions.shape[0]
    initial = _initial_scores(start_transitions)
    batch_size = ops.shape(potentials)[0]
    identity = ops.broadcast_to(ops.expand_dims(ops.arange(num_tags, dtype="int32"), 0), (batch_size, num_tags))

    def forward(carry, inputs):
        alpha, _ = carry
        unary, step_mask, is_first = inputs[..., :num_tags], inputs[..., num_tags], inputs[..., num_tags + 1]
        scores = ops.expand_dims(alpha, 2) + ops.expand_dims(transitions, 0)
        first = ops.expand_dims(is_first, 1) > 0
        real = ops.expand_dims(step_mask, 1) > 0
        new_alpha = ops.where(first, initial(unary), ops.max(scores, axis=1) + unary)
        new_alpha = ops.where(real, new_alpha, alpha)
        # At the first position and at padding the "previous" tag of k is k itself, so
        # backtracking carries the last real tag through the padding unchanged.
        keep = ops.logical_and(real, ops.logical_not(first))
        pointer = ops.where(keep, ops.cast(ops.argmax(scores, axis=1), "int32"), identity)
        return (new_alpha, pointer), (new_alpha, pointer)

    (alpha, _), (_, backpointers) = ops.scan(
        forward, (ops.zeros_like(potentials[:, 0]), identity), _scan_inputs(potentials, mask)
    )

    if end_transitions is not None:
        alpha = alpha + ops.cast(end_transitions, "float32")
    last_tag = ops.cast(ops.argmax(alpha, axis=1), "int32")
    has_tokens = mask[:, 0] > 0
    best_score = ops.max(alpha, axis=1)
    best_score = ops.where(has_tokens, best_score, ops.zeros_like(best_score))

    def backward(tag, pointer):
        # Emit the tag of position t, carry the tag of position t - 1.
        previous_tag = ops.take_along_axis(pointer, ops.expand_dims(tag, 1), axis=1)[:, 0]
        return previous_tag, tag

    _, tags = ops.scan(backward, last_tag, backpointers, reverse=True)
    tags = ops.transpose(tags, (1, 0))
    tags = tags * ops.cast(mask > 0, "int32")
    return tags, best_score


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class CRF(keras.layers.Layer):
    """Linear-chain CRF layer: holds the transition parameters, scores and decodes tag sequences.

    The layer is an identity in the forward pass, `call(potentials, mask=None)` returns
    `potentials` unchanged, so it can close a functional model whose output are the per-token
    tag scores while the CRF's variables become part of the model. Use:

    * `log_likelihood(potentials, tags, mask)` / `loss(y_true, y_pred)` for training;
    * `viterbi_decode(potentials, mask)` for prediction (works inside jit-compiled functions).

    `loss` is usable directly as a Keras loss: `model.compile(loss=crf.loss)`; it reads the
    padding from `y_true`, where a negative tag (e.g. -1) marks a padding position.

    Args:
        num_tags: Number of tags K.
        use_start_end_transitions: Whether to learn start/end transition scores [K] too.
        transitions_initializer: Initializer of the [K, K] (and [K]) transition scores.
        transitions_regularizer: Optional regularizer of the [K, K] transition scores.
        **kwargs: `keras.layers.Layer` arguments (name, dtype, ...).

    Examples:

    >>> crf = CRF(num_tags=3)
    >>> inputs = keras.Input((None, 8))
    >>> potentials = crf(keras.layers.Dense(3)(inputs))
    >>> model = keras.Model(inputs, potentials)
    >>> model.compile(optimizer="adam", loss=crf.loss)
    >>> x = keras.ops.ones((2, 4, 8))
    >>> tags, scores = crf.viterbi_decode(model(x), mask=[[1, 1, 1, 1], [1, 1, 0, 0]])
    >>> tuple(tags.shape)
    (2, 4)
    """

    def __init__(
        self,
        num_tags,
        use_start_end_transitions=False,
        transitions_initializer="glorot_uniform",
        transitions_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_tags = int(num_tags)
        self.use_start_end_transitions = bool(use_start_end_transitions)
        self.transitions_initializer = keras.initializers.get(transitions_initializer)
        self.transitions_regularizer = keras.regularizers.get(transitions_regularizer)
        self.supports_masking = True

    def build(self, input_shape=None):
        if input_shape is not None and input_shape[-1] is not None and input_shape[-1] != self.num_tags:
            raise ValueError(f"CRF expects potentials with last dimension {self.num_tags}, got shape {input_shape}.")
        self.transitions = self.add_weight(
            shape=(self.num_tags, self.num_tags),
            initializer=self.transitions_initializer,
            regularizer=self.transitions_regularizer,
            name="transitions",
        )
        if self.use_start_end_transitions:
            self.start_transitions = self.add_weight(
                shape=(self.num_tags,), initializer=self.transitions_initializer, name="start_transitions"
            )
            self.end_transitions = self.add_weight(
                shape=(self.num_tags,), initializer=self.transitions_initializer, name="end_transitions"
            )
        else:
            self.start_transitions = None
            self.end_transitions = None
        self.built = True

    def _ensure_built(self, potentials):
        if not self.built:
            self.build(tuple(potentials.shape))

    def _boundary(self):
        if not self.use_start_end_transitions:
            return None, None
        return self.start_transitions, self.end_transitions

    def call(self, potentials, mask=None):
        """Identity: returns `potentials` [B, T, K] unchanged (see the class docstring)."""
        return potentials

    def compute_mask(self, inputs, mask=None):
        # The per-token mask is not propagated: the CRF's loss is per sequence.
        return None

    def compute_output_shape(self, input_shape):
        return input_shape

    def log_likelihood(self, potentials, tags, mask=None):
        """Log-likelihood of `tags` [B, T] under the CRF given `potentials` [B, T, K]; returns [B].

        Args:
            potentials: float tensor [B, T, K].
            tags: int tensor [B, T].
            mask: optional [B, T] prefix mask.

        Returns:
            float32 tensor [B].

        Examples:

        >>> crf = CRF(num_tags=2)
        >>> tuple(crf.log_likelihood(keras.ops.zeros((1, 3, 2)), keras.ops.zeros((1, 3), "int32")).shape)
        (1,)
        """
        self._ensure_built(potentials)
        start, end = self._boundary()
        return crf_log_likelihood(potentials, tags, self.transitions, mask, start, end)

    def viterbi_decode(self, potentials, mask=None):
        """Best tag sequences `(tags [B, T] int32, best_score [B])`; padding positions get tag 0.

        Args:
            potentials: float tensor [B, T, K].
            mask: optional [B, T] prefix mask.

        Returns:
            `(tags, best_score)`.

        Examples:

        >>> crf = CRF(num_tags=2)
        >>> tags, score = crf.viterbi_decode(keras.ops.zeros((1, 3, 2)))
        >>> tuple(tags.shape)
        (1, 3)
        """
        self._ensure_built(potentials)
        start, end = self._boundary()
        return crf_viterbi_decode(potentials, self.transitions, mask, start, end)

    def loss(self, y_true, y_pred):
        """Negative log-likelihood per sequence, for `model.compile(loss=crf.loss)`.

        Args:
            y_true: [B, T] gold tags; negative values (e.g. -1) mark padding positions.
            y_pred: [B, T, K] potentials (the output of this layer).

        Returns:
            float32 tensor [B].

        Examples:

        >>> crf = CRF(num_tags=2)
        >>> tuple(crf.loss(keras.ops.convert_to_tensor([[0, 1, -1]]), keras.ops.zeros((1, 3, 2))).shape)
        (1,)
        """
        tags = ops.cast(ops.convert_to_tensor(y_true), "int32")
        mask = ops.cast(tags >= 0, "float32")
        return -self.log_likelihood(y_pred, ops.maximum(tags, 0), mask)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_tags": self.num_tags,
                "use_start_end_transitions": self.use_start_end_transitions,
                "transitions_initializer": keras.initializers.serialize(self.transitions_initializer),
                "transitions_regularizer": keras.regularizers.serialize(self.transitions_regularizer),
            }
        )
        return config
