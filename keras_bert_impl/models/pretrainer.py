"""BertPretrainer: the masked-LM + next-sentence-prediction model of BERT's pretraining."""

import keras
from keras import ops

from keras_bert_impl.backends.tf_replicas import num_replicas_in_sync, replica_sum
from keras_bert_impl.checkpoints.head_weights import masked_lm_table, next_sentence_table
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.preprocessors.masked_lm_preprocessor import BertMaskedLMPreprocessor
from keras_bert_impl.models.task import BertTask, dense_head
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead

# Denominator guard of the original `get_masked_lm_output`: sum(w * nll) / (sum(w) + 1e-5).
_MLM_LOSS_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(BertTask):
    """BERT's pretraining model: a `BertBackbone`, a masked-LM head and a next-sentence head.

    Inputs, a dict: the backbone's `token_ids`, `segment_ids`, `padding_mask` ([batch, seq]) and
    `masked_lm_positions` [batch, max_predictions_per_seq].
    Outputs, a dict: `masked_lm_logits` [batch, max_predictions_per_seq, vocab] (float32, computed only at
    the masked positions) and `next_sentence_logits` [batch, 2] (label 0 = B follows A, 1 = random B).

    Trained with `model.fit` on the batches of `keras_bert_impl.data.tf_pretraining_data`, whose targets are
    the dict {`masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`}. The loss is the original's:

        masked_lm_loss = sum(w * nll) / (sum(w) + 1e-5)   over the masked positions
        next_sentence_loss = mean cross-entropy
        loss = masked_lm_loss + next_sentence_loss

    and fit/evaluate report `masked_lm_accuracy`, `masked_lm_loss`, `next_sentence_accuracy`,
    `next_sentence_loss`. Compile it with an optimizer only (`model.compile(optimizer=...)`).

    Args:
        backbone: a `BertBackbone`.

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertPretrainer(BertBackbone(BertConfig.preset("bert_tiny")))
    >>> outputs = model({
    ...     "token_ids": keras.ops.ones((2, 8), "int32"),
    ...     "segment_ids": keras.ops.zeros((2, 8), "int32"),
    ...     "padding_mask": keras.ops.ones((2, 8), "int32"),
    ...     "masked_lm_positions": keras.ops.array([[1, 2], [3, 0]], "int32"),
    ... })
    >>> tuple(outputs["masked_lm_logits"].shape), tuple(outputs["next_sentence_logits"].shape)
    ((2, 2, 30522), (2, 2))

    Continue pretraining from a checkpoint with `BertPretrainer.from_pretrained(path)`.
    """

    hf_architecture = "BertForPreTraining"
    preprocessor_class = BertMaskedLMPreprocessor
    # compile(optimizer="auto"): the paper's pre-training rate.
    default_learning_rate = 1e-4

    def __init__(self, backbone, **kwargs):
        config = backbone.config
        # === Layers ===
        masked_lm_head = MaskedLMHead(
            backbone.token_embedding,
            hidden_act=config.hidden_act,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range,
            dtype=backbone.dtype_policy,
            name="masked_lm_head",
        )
        _, next_sentence_head = dense_head(2, backbone, name="next_sentence_head")

        # === Functional graph ===
        inputs = dict(backbone.input)
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        backbone_outputs = backbone({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})
        masked_lm_logits = masked_lm_head(backbone_outputs["sequence_output"], inputs["masked_lm_positions"])
        next_sentence_logits = keras.layers.Activation("linear", dtype="float32", name="next_sentence_logits")(
            next_sentence_head(backbone_outputs["pooled_output"])
        )
        super().__init__(
            inputs=inputs,
            outputs={"masked_lm_logits": masked_lm_logits, "next_sentence_logits": next_sentence_logits},
            **kwargs,
        )

        # === Config ===
        self.backbone = backbone
        self.masked_lm_head = masked_lm_head
        self.next_sentence_head = next_sentence_head
        self.add_mean_metrics("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss")

    # ------------------------------------------------------------------------------------- loss
    def pretraining_losses(self, y, y_pred, sample_weight=None):
        """(total loss, masked_lm_loss, next_sentence_loss): the original's formulas, float32 scalars.

        `sample_weight` [B] (or None, or a dict of them under "masked_lm_ids" and "next_sentence_labels")
        multiplies each example's terms; the denominators stay unweighted
        (Keras' "sum_over_batch_size"), so weights of 1 give the original's losses and weights of 0 give 0.

        Under a tf.distribute strategy each replica returns its share: the weight sum and the batch size
        in the denominators are summed over the replicas, so the shares add up to exactly the loss of the
        whole global batch on one device.
        """
        logits = ops.cast(y_pred["masked_lm_logits"], "float32")  # [B, P, V]
        ids = ops.cast(y["masked_lm_ids"], "int32")  # [B, P]
        weights = ops.cast(y["masked_lm_weights"], "float32")  # [B, P]
        mlm_example = losses.example_weights(sample_weight, ops.shape(ids)[0], "masked_lm_ids")  # [B]
        mlm_nll = keras.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True)  # [B, P]
        mlm_loss = ops.sum(weights * mlm_nll * mlm_example[:, None])
        mlm_loss = mlm_loss / (replica_sum(ops.sum(weights)) + _MLM_LOSS_EPSILON)

        nsp_logits = ops.cast(y_pred["next_sentence_logits"], "float32")  # [B, 2]
        nsp_labels = ops.reshape(ops.cast(y["next_sentence_labels"], "int32"), (-1,))  # [B]
        nsp_nll = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits, from_logits=True)  # [B]
        global_batch = replica_sum(ops.cast(ops.shape(nsp_nll)[0], "float32"))
        nsp_example = losses.example_weights(sample_weight, ops.shape(nsp_labels)[0], "next_sentence_labels")
        nsp_loss = ops.sum(nsp_nll * nsp_example) / ops.maximum(global_batch, 1.0)  # an empty batch gives 0, not NaN
        return mlm_loss + nsp_loss, mlm_loss, nsp_loss

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        total, mlm_loss, nsp_loss = self.pretraining_losses(y, y_pred, sample_weight)
        batch = ops.shape(y["masked_lm_ids"])[0]
        mlm_example = losses.example_weights(sample_weight, batch, "masked_lm_ids")  # [B]
        weights = ops.cast(y["masked_lm_weights"], "float32") * mlm_example[:, None]  # [B, P]
        mlm_correct = ops.cast(
            ops.equal(ops.argmax(y_pred["masked_lm_logits"], axis=-1), ops.cast(y["masked_lm_ids"], "int32")),
            "float32",
        )
        nsp_labels = ops.reshape(ops.cast(y["next_sentence_labels"], "int32"), (-1,))
        nsp_correct = ops.cast(ops.equal(ops.argmax(y_pred["next_sentence_logits"], axis=-1), nsp_labels), "float32")
        # Mean metrics average over replicas: a share times the replica count averages to the global loss.
        # Weighted by batch size, as Keras weights its own loss tracker: an empty final batch (TensorFlow's
        # evaluate can produce one) then adds nothing.
        replicas = num_replicas_in_sync()
        batch_size = ops.cast(ops.shape(nsp_labels)[0], "float32")
        self.masked_lm_accuracy.update_state(mlm_correct, sample_weight=weights)
        self.masked_lm_loss.update_state(mlm_loss * replicas, sample_weight=batch_size)
        self.next_sentence_accuracy.update_state(
            nsp_correct, sample_weight=losses.example_weights(sample_weight, batch, "next_sentence_labels"))
        self.next_sentence_loss.update_state(nsp_loss * replicas, sample_weight=batch_size)
        # Keras adds up the replicas' gradients and reports loss * replicas averaged: both exact for shares.
        return total

    # ------------------------------------------------------------------------------ serialization
    def head_weight_tables(self):
        return {
            "masked-LM": masked_lm_table(self.masked_lm_head),
            "next-sentence": next_sentence_table(self.next_sentence_head),
        }

    @classmethod
    def from_pretrained(cls, path, dtype=None, preprocessor="auto", **config_overrides):
        """A pretrainer on a checkpoint's backbone, with its masked-LM and NSP heads when it has them.

        Reads Hugging Face BertForPreTraining / BertForMaskedLM directories (`cls.predictions.*`,
        `cls.seq_relationship.*`) and Google checkpoints (`cls/predictions/*`, `cls/seq_relationship/*`).
        Heads absent from the checkpoint keep their random initialization, with a warning.
        """
        backbone = BertBackbone.from_pretrained(path, dtype=dtype, **config_overrides)
        model = cls(backbone, preprocessor=cls.pretrained_preprocessor(path, preprocessor))
        model.load_head_weights(backbone.head_weights, source=str(path))
        return model


def load_pretraining_head_weights(model, head_weights, source="checkpoint"):
    """Assigns `cls.predictions.*` / `cls.seq_relationship.*` weights; returns the names of absent heads."""
    return model.load_head_weights(head_weights, source, warn=False)
