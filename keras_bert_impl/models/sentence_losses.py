"""The contrastive losses of sentence embeddings, as Keras losses on `BertSentenceEncoder`'s outputs.

`y_pred` is the encoder's output for a batch of examples of K texts each, [batch, K, dim] (`x` = K columns of
texts, `BertSentenceEncoderPreprocessor`); `y_true` one number per example ([batch]: a scored pair's score;
zeros where the loss reads none). Each loss is the formula of its reference implementation:

    MultipleNegativesRankingLoss   sentence-transformers' (in-batch negatives, InfoNCE): for each anchor a_i,
                                   cross-entropy of scale * cos(a_i, d) over every candidate d of the batch
                                   (the positives p_j and the hard negatives), the right one p_i; scale 20.
                                   `symmetric=True`: MultipleNegativesSymmetricRankingLoss, the mean of that
                                   softmax's log-partition and the one of p_i over the anchors.
    SimCSELoss                     unsupervised SimCSE (Gao et al., 2021; princeton-nlp/SimCSE's cl_forward):
                                   the same, on the same sentence twice (two dropout masks), at temperature
                                   0.05 (scale 1 / 0.05).
    CoSENTLoss                     sentence-transformers' CoSENT, for scored pairs (s_i = scale * cos(u_i, v_i)):
                                   log(1 + sum over pairs with score_i < score_j of exp(s_i - s_j)); scale 20.

The ranking losses return one value per anchor (Keras averages them, weighting by `sample_weight`); CoSENT,
whose terms pair examples, returns the batch's value for each example (so `sample_weight` scales it by the
weights' mean). Under a tf.distribute strategy the candidates (and
CoSENT's pairs) come from every replica (`backends.tf_replicas.replica_gather`), so that two replicas train as
one device on the global batch; JAX's data parallelism computes on the global batch as it is.
"""

import keras
from keras import ops

from keras_bert_impl.backends import tf_replicas


def cosine_similarity(a, b):
    """The cosine similarity of every row of `a` [n, d] with every row of `b` [m, d]: [n, m] (rows normalized
    as `torch.nn.functional.normalize`: divided by max(norm, 1e-12))."""
    a = ops.normalize(a, axis=-1, order=2, epsilon=1e-12)
    b = ops.normalize(b, axis=-1, order=2, epsilon=1e-12)
    return ops.matmul(a, ops.transpose(b))


def pairwise_cosine_similarity(a, b):
    """The cosine similarity of row i of `a` with row i of `b`, [n] for [n, d] each."""
    a = ops.normalize(a, axis=-1, order=2, epsilon=1e-12)
    b = ops.normalize(b, axis=-1, order=2, epsilon=1e-12)
    return ops.sum(a * b, axis=-1)


def _columns(y_pred, minimum, loss):
    """`y_pred` [B, K, D] as float32, checked to have at least `minimum` columns where K is known."""
    y_pred = ops.cast(y_pred, "float32")
    if len(y_pred.shape) != 3:
        raise ValueError(f"{loss} takes the sentence encoder's output [batch, columns, dim], got shape {y_pred.shape}.")
    columns = y_pred.shape[1]
    if columns is not None and columns < minimum:
        raise ValueError(f"{loss} needs at least {minimum} texts per example (columns of x), got {columns}.")
    return y_pred


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives (sentence-transformers' `MultipleNegativesRankingLoss`; see the module docstring).

    `x` holds (anchors, positives) or (anchors, positives, negatives, ...): column 0 the anchors, column 1 each
    anchor's positive, further columns hard negatives. Every other example's positive and every hard negative
    of the batch is a negative of each anchor. `y_true` is not read.

    Args:
        scale: the factor of the cosine similarities (1 / temperature): 20.
        symmetric: also the softmax of each positive over the anchors (sentence-transformers'
            `MultipleNegativesSymmetricRankingLoss`: the mean of the two log-partitions).

    Examples:

    >>> loss = MultipleNegativesRankingLoss()
    >>> y_pred = keras.ops.convert_to_tensor([[[1.0, 0.0], [1.0, 0.1]], [[0.0, 1.0], [0.1, 1.0]]])  # [2, 2, 2]
    >>> round(float(loss(keras.ops.zeros((2,)), y_pred)), 6)  # each anchor's positive far ahead: near 0
    0.0
    """

    def __init__(self, scale=20.0, symmetric=False, name="multiple_negatives_ranking_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        if not float(scale) > 0:
            raise ValueError(f"scale must be positive, got {scale!r}.")
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    def call(self, y_true, y_pred):
        y_pred = _columns(y_pred, 2, type(self).__name__)  # [B, K, D]
        anchors, positives = y_pred[:, 0], y_pred[:, 1]  # [B, D] each
        # Every candidate of the (global) batch: the positives, then each column of hard negatives.
        candidates = tf_replicas.replica_gather(ops.reshape(ops.transpose(y_pred[:, 1:], (1, 0, 2)),
                                                            (-1, ops.shape(y_pred)[-1])))  # [(K-1) B_all, D]
        positive = self.scale * pairwise_cosine_similarity(anchors, positives)  # [B]
        log_partition = ops.logsumexp(self.scale * cosine_similarity(anchors, candidates), axis=-1)  # [B]
        if self.symmetric:
            all_anchors = tf_replicas.replica_gather(anchors)  # [B_all, D]
            backward = ops.logsumexp(self.scale * cosine_similarity(positives, all_anchors), axis=-1)  # [B]
            log_partition = (log_partition + backward) / 2.0
        return log_partition - positive  # [B]

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric}


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class SimCSELoss(MultipleNegativesRankingLoss):
    """Unsupervised SimCSE: in-batch negatives on the same sentence twice, at `temperature` 0.05.

    `x` holds (texts, texts): the encoder reads each text twice in one batch, and dropout (training) makes the
    two embeddings differ; a third column would be hard negatives, as in supervised SimCSE.

    Args:
        temperature: the cosine similarities are divided by it (0.05, the paper's).
    """

    def __init__(self, temperature=0.05, name="simcse_loss", **kwargs):
        kwargs.pop("scale", None)
        kwargs.pop("symmetric", None)
        if not float(temperature) > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}.")
        super().__init__(scale=1.0 / float(temperature), name=name, **kwargs)
        self.temperature = float(temperature)

    def get_config(self):
        config = super().get_config()
        del config["scale"], config["symmetric"]
        return {**config, "temperature": self.temperature}


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class CoSENTLoss(keras.losses.Loss):
    """CoSENT (sentence-transformers' `CoSENTLoss`) for pairs scored by `y_true` (any scale: only their order
    counts); see the module docstring. `x` holds (sentences1, sentences2).

    Args:
        scale: the factor of the cosine similarities: 20.

    Examples:

    >>> loss = CoSENTLoss()
    >>> y_pred = keras.ops.convert_to_tensor([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])  # cos 1, 0
    >>> round(float(loss(keras.ops.convert_to_tensor([5.0, 0.0]), y_pred)), 6)  # the order is right: log(1 + e^-20)
    0.0
    >>> round(float(loss(keras.ops.convert_to_tensor([0.0, 5.0]), y_pred)), 4)  # wrong: log(1 + e^20)
    20.0
    """

    def __init__(self, scale=20.0, name="cosent_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        if not float(scale) > 0:
            raise ValueError(f"scale must be positive, got {scale!r}.")
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        y_pred = _columns(y_pred, 2, type(self).__name__)  # [B, K, D]
        local_scores = self.scale * pairwise_cosine_similarity(y_pred[:, 0], y_pred[:, 1])  # [B]
        labels = ops.reshape(ops.cast(y_true, "float32"), (-1,))  # [B]
        scores, labels = tf_replicas.replica_gather(local_scores), tf_replicas.replica_gather(labels)  # [B_all]
        differences = scores[:, None] - scores[None, :]  # [B_all, B_all]: s_i - s_j
        lower = ops.cast(labels[:, None] < labels[None, :], "float32")  # pairs with label_i < label_j
        differences = differences - (1.0 - lower) * 1e12
        loss = ops.logsumexp(ops.concatenate([ops.zeros((1,)), ops.reshape(differences, (-1,))]))
        # The batch's value for each example, which Keras averages (and, over replicas, divides among them).
        return ops.ones_like(local_scores) * loss  # [B]

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
