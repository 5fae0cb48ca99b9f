"""BertPretrainer: the masked-LM + next-sentence-prediction model of BERT's pretraining, and the other
pretraining objectives of the paper's Table 5 (masked LM only, left-to-right LM)."""

import keras
from keras import ops

from keras_bert_impl.backends.tf_replicas import num_replicas_in_sync, replica_sum
from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.stored_settings import StoredSetting
from keras_bert_impl.preprocessors.masked_lm_preprocessor import BertMaskedLMPreprocessor
from keras_bert_impl.models.task_model import BertTaskModel, dense_head
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.utils.errors import UserInputError

# Denominator guard of the original `get_masked_lm_output`: sum(w * nll) / (sum(w) + 1e-5).
_MLM_LOSS_EPSILON = 1e-5

# Pretraining objectives (the paper's Table 5), each saved as a Hugging Face class (`PRETRAINING_ARCHITECTURES`):
#   mlm_nsp  masked LM + next-sentence prediction (BERT)               BertForPreTraining
#   sop      the same model trained on sentence-order labels (ALBERT's
#            SOP: create_pretraining_data.py --sentence_order)         BertForPreTraining
#   mlm      masked LM only ("No NSP"): no next-sentence head            BertForMaskedLM
#   ltr      left-to-right LM ("LTR & No NSP"): next-token prediction
#            at every position, on a causal backbone, no NSP head        BertLMHeadModel
OBJECTIVES = PRETRAINING_OBJECTIVES
# The Hugging Face class each pretraining objective saves as (the paper's Table 5 rows).
PRETRAINING_ARCHITECTURES = {
    "mlm_nsp": "BertForPreTraining", "sop": "BertForPreTraining", "mlm": "BertForMaskedLM", "ltr": "BertLMHeadModel"
}
# config.json's entry recording a pretraining objective other than mlm_nsp.
OBJECTIVE_KEY = "keras_pretraining_objective"
# The largest log-perplexity `_Perplexity` reports (see there).
_MAX_LOG_PERPLEXITY = 80.0


class _Perplexity(keras.metrics.Mean):
    """exp of the weighted mean of the per-token negative log-likelihoods it is updated with.

    The mean is over every token seen since the last reset (each weighted by its `sample_weight`), not a
    mean of per-batch means: over an evaluation, exp(sum(w * nll) / sum(w)) for all its tokens. A mean nll
    above 80 (far beyond a uniform guess over any vocabulary) reads as exp(80). Created by `BertPretrainer`
    itself (not saved in configs).

    Examples:

    >>> metric = _Perplexity()
    >>> metric.update_state([1.0, 2.0], sample_weight=[1.0, 1.0])
    >>> metric.update_state([3.0], sample_weight=[1.0])
    >>> round(float(metric.result()), 4)  # exp(2)
    7.3891
    """

    def result(self):
        # Saturates at exp(80) ~ 5.5e34, finite in float32 (exp overflows past 88.7 nats per token): a
        # diverging model's finite loss must not show as an infinite metric, which stops training.
        return ops.exp(ops.minimum(super().result(), _MAX_LOG_PERPLEXITY))


class Objective(StoredSetting):
    """The pretraining `objective`: config.json's `keras_pretraining_objective` (written for every objective but
    mlm_nsp). None given: the recorded one, else "ltr" for a causal checkpoint (`is_decoder: true`) and
    "mlm_nsp" otherwise; "ltr" on a bidirectional checkpoint is refused."""

    arguments = ("objective",)
    keys = (OBJECTIVE_KEY,)

    def save(self, model, label_names=None):
        return {} if model.objective == "mlm_nsp" else {OBJECTIVE_KEY: model.objective}

    def load(self, checkpoint, backbone, given):
        causal = backbone.config.attention_direction == "causal"
        objective = given.get("objective")
        if objective is None:
            stored = checkpoint.setting(OBJECTIVE_KEY)
            objective = stored if stored in OBJECTIVES else ("ltr" if causal else "mlm_nsp")
        if objective == "ltr" and not causal:
            raise UserInputError(
                f"{checkpoint.path}: objective='ltr' (left-to-right LM) continues from a causal checkpoint only "
                "(attention_direction='causal' / is_decoder=true); this one is bidirectional. Start an LTR model "
                "from a config instead."
            )
        return {"objective": objective}


@model_io.register_task(architectures=tuple(dict.fromkeys(PRETRAINING_ARCHITECTURES.values())), pipeline="fill-mask",
                        serving="backbone", backbone_source=True)
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(BertTaskModel):
    """BERT's pretraining model: a `BertBackbone`, a masked-LM head and a next-sentence head (by default).

    Inputs, a dict: the backbone's `token_ids`, `segment_ids`, `padding_mask` ([batch, seq]) and
    `masked_lm_positions` [batch, max_predictions_per_seq].
    Outputs, a dict: `masked_lm_logits` [batch, max_predictions_per_seq, vocab] (float32, computed only at
    the masked positions) and `next_sentence_logits` [batch, 2] (label 0 = B follows A, 1 = random B).

    Trained with `model.fit` on the batches of `keras_bert_impl.data.tf_pretraining_datasets`, whose targets are
    the dict {`masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`}. The loss is the original's:

        masked_lm_loss = sum(w * nll) / (sum(w) + 1e-5)   over the masked positions
        next_sentence_loss = mean cross-entropy
        loss = masked_lm_loss + next_sentence_loss

    and fit/evaluate report `masked_lm_accuracy`, `masked_lm_loss`, `masked_lm_perplexity`,
    `next_sentence_accuracy`, `next_sentence_loss`. `masked_lm_perplexity` is exp of the mean masked-LM
    nll over every masked token evaluated (token-weighted over all batches: the paper's "LM (ppl)").
    Compile it with an optimizer only (`model.compile(optimizer=...)`).

    `objective` selects the paper's Table 5 pretraining task:

    - `"mlm_nsp"` (default): the above. `"sop"`: the same model, named for sentence-order data
      (`create_pretraining_data.py --sentence_order`, whose label 1 means "swapped").
    - `"mlm"` ("No NSP"): no next-sentence head at all; the loss is `masked_lm_loss`, and the targets
      need no `next_sentence_labels` (ignored when present). Saves as a Hugging Face `BertForMaskedLM`.
    - `"ltr"` ("LTR & No NSP"): a left-to-right LM on a causal backbone (`BertConfig.attention_direction=
      "causal"`, else `ValueError`). Inputs are the backbone's only; the output `lm_logits` [batch, seq,
      vocab] comes from the same `MaskedLMHead` (tied to the word embeddings) at every position, and
      position t predicts token t + 1. Targets {`next_token_ids`, `next_token_weights`} [batch, seq]
      (`tf_pretraining_objectives.left_to_right_lm_batch` makes them from the masked TFRecords); the loss is
      the mean next-token cross-entropy over the positions of weight 1 (next token real):

          lm_loss = sum(w * nll) / sum(w)

      and fit/evaluate report `lm_accuracy`, `lm_loss`, `lm_perplexity` (exp of the mean next-token nll
      over every predicted token). Saves as a Hugging Face `BertLMHeadModel` (`is_decoder: true`).

    Args:
        backbone: a `BertBackbone`.
        objective: one of `OBJECTIVES`: "mlm_nsp", "sop", "mlm", "ltr".

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

    A left-to-right LM on a causal backbone:

    >>> causal = BertConfig.preset("bert_tiny", attention_direction="causal")
    >>> ltr = BertPretrainer(BertBackbone(causal), objective="ltr")
    >>> outputs = ltr({
    ...     "token_ids": keras.ops.ones((2, 8), "int32"),
    ...     "segment_ids": keras.ops.zeros((2, 8), "int32"),
    ...     "padding_mask": keras.ops.ones((2, 8), "int32"),
    ... })
    >>> tuple(outputs["lm_logits"].shape)
    (2, 8, 30522)

    Continue pretraining from a checkpoint with `BertPretrainer.from_pretrained(path)`: it reads Hugging Face
    BertForPreTraining / BertForMaskedLM / BertLMHeadModel directories (`cls.predictions.*`,
    `cls.seq_relationship.*`) and Google checkpoints (`cls/predictions/*`, `cls/seq_relationship/*`); heads
    absent from the checkpoint keep their random initialization, with a warning. `objective` defaults to the
    one `save_pretrained` recorded (`Objective`). A task model's directory is refused unless
    `ignore_stored_head=True` (which loads its backbone with new pretraining heads); a pretraining directory
    loads into every task model (its backbone).
    """

    preprocessor_class = BertMaskedLMPreprocessor
    stored_settings = (Objective(),)
    # compile(optimizer="auto"): the paper's pre-training rate.
    default_learning_rate = 1e-4

    def __init__(self, backbone, objective="mlm_nsp", **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(f"BertPretrainer objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}.")
        config = backbone.config
        if objective == "ltr" and config.attention_direction != "causal":
            raise ValueError(
                "BertPretrainer objective='ltr' (left-to-right LM) needs a causal backbone, "
                f"BertConfig(attention_direction='causal'); this backbone is {config.attention_direction}."
            )
        if objective == "ltr":
            if kwargs.get("preprocessor") is not None:
                raise ValueError(
                    "BertPretrainer objective='ltr' takes no preprocessor (BertMaskedLMPreprocessor masks tokens); "
                    "feed it tf_pretraining_objectives.left_to_right_lm_batch's (x, y)."
                )
            inputs, outputs, masked_lm_head, next_sentence_head = _left_to_right_graph(backbone)
        else:
            inputs, outputs, masked_lm_head, next_sentence_head = _masked_lm_graph(backbone, objective)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.objective = objective
        self.masked_lm_head = masked_lm_head
        self.next_sentence_head = next_sentence_head
        if objective == "ltr":
            self.add_mean_metrics("lm_accuracy", "lm_loss")
            self.lm_perplexity = _Perplexity(name="lm_perplexity")
        else:
            self.add_mean_metrics("masked_lm_accuracy", "masked_lm_loss")
            self.masked_lm_perplexity = _Perplexity(name="masked_lm_perplexity")
        if next_sentence_head is not None:
            self.add_mean_metrics("next_sentence_accuracy", "next_sentence_loss")

    @property
    def reads_pooled_output(self):
        """Whether a next-sentence head reads the pooler ("mlm_nsp", "sop"); "mlm" and "ltr" train without it."""
        return getattr(self, "next_sentence_head", None) is not None

    # ------------------------------------------------------------------------------------- loss
    def pretraining_losses(self, y, y_pred, sample_weight=None):
        """(total loss, LM loss, next_sentence_loss): the original's formulas, float32 scalars.

        The LM loss is the masked-LM loss, or with `objective="ltr"` the next-token loss
        (`next_token_losses`); without a next-sentence head (`"mlm"`, `"ltr"`) next_sentence_loss is 0
        and the total is the LM loss.

        `sample_weight` [B] (or None, or a dict of them under "masked_lm_ids" and "next_sentence_labels";
        "next_token_ids" for "ltr") multiplies each example's terms; the denominators stay unweighted
        (Keras' "sum_over_batch_size"), so weights of 1 give the original's losses and weights of 0 give 0.

        Under a tf.distribute strategy each replica returns its share: the weight sum and the batch size
        in the denominators are summed over the replicas, so the shares add up to exactly the loss of the
        whole global batch on one device.
        """
        return self._losses_and_token_terms(y, y_pred, sample_weight)[:3]

    def _losses_and_token_terms(self, y, y_pred, sample_weight):
        """`pretraining_losses`, then the LM's nll [B, P or T] and each prediction's weight [B, P or T]."""
        if self.objective == "ltr":
            lm_loss, nll, token_weights = self.next_token_losses(y, y_pred, sample_weight)
            return lm_loss, lm_loss, ops.zeros((), "float32"), nll, token_weights
        mlm_loss, mlm_nll, mlm_weights = self._masked_lm_terms(y, y_pred, sample_weight)
        if self.next_sentence_head is None:
            return mlm_loss, mlm_loss, ops.zeros((), "float32"), mlm_nll, mlm_weights

        nsp_logits = ops.cast(y_pred["next_sentence_logits"], "float32")  # [B, 2]
        nsp_labels = ops.reshape(ops.cast(y["next_sentence_labels"], "int32"), (-1,))  # [B]
        nsp_nll = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits, from_logits=True)  # [B]
        global_batch = replica_sum(ops.cast(ops.shape(nsp_nll)[0], "float32"))
        nsp_example = losses.example_weights(sample_weight, ops.shape(nsp_labels)[0], "next_sentence_labels")
        nsp_loss = ops.sum(nsp_nll * nsp_example) / ops.maximum(global_batch, 1.0)  # an empty batch gives 0, not NaN
        return mlm_loss + nsp_loss, mlm_loss, nsp_loss, mlm_nll, mlm_weights

    def _masked_lm_terms(self, y, y_pred, sample_weight):
        """(masked_lm_loss, nll [B, P], the weight of each prediction [B, P]: masked_lm_weights x example)."""
        logits = ops.cast(y_pred["masked_lm_logits"], "float32")  # [B, P, V]
        ids = ops.cast(y["masked_lm_ids"], "int32")  # [B, P]
        weights = ops.cast(y["masked_lm_weights"], "float32")  # [B, P]
        mlm_example = losses.example_weights(sample_weight, ops.shape(ids)[0], "masked_lm_ids")  # [B]
        mlm_nll = keras.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True)  # [B, P]
        mlm_loss = ops.sum(weights * mlm_nll * mlm_example[:, None])
        mlm_loss = mlm_loss / (replica_sum(ops.sum(weights)) + _MLM_LOSS_EPSILON)
        return mlm_loss, mlm_nll, weights * mlm_example[:, None]

    def next_token_losses(self, y, y_pred, sample_weight=None):
        """The left-to-right LM loss ("ltr"): (loss, nll [B, T], the weight of each prediction [B, T]).

        loss = sum(w * nll) / sum(next_token_weights), w = next_token_weights x the example's weight,
        where nll [B, T] is the cross-entropy of `lm_logits` at position t against `next_token_ids` at t
        (the token at t + 1). The denominator counts every predicted token of the global batch (at least 1).
        """
        logits = ops.cast(y_pred["lm_logits"], "float32")  # [B, T, V]
        ids = ops.cast(y["next_token_ids"], "int32")  # [B, T]
        weights = ops.cast(y["next_token_weights"], "float32")  # [B, T]
        example = losses.example_weights(sample_weight, ops.shape(ids)[0], "next_token_ids")  # [B]
        nll = keras.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True)  # [B, T]
        token_weights = weights * example[:, None]  # [B, T]
        loss = ops.sum(nll * token_weights) / ops.maximum(replica_sum(ops.sum(weights)), 1.0)
        return loss, nll, token_weights

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.objective == "ltr":
            return self._compute_next_token_loss(y, y_pred, sample_weight)
        total, mlm_loss, nsp_loss, mlm_nll, weights = self._losses_and_token_terms(y, y_pred, sample_weight)
        batch = ops.shape(y["masked_lm_ids"])[0]
        mlm_correct = ops.cast(
            ops.equal(ops.argmax(y_pred["masked_lm_logits"], axis=-1), ops.cast(y["masked_lm_ids"], "int32")),
            "float32",
        )
        # Mean metrics average over replicas: a share times the replica count averages to the global loss.
        # Weighted by batch size, as Keras weights its own loss tracker: an empty final batch (TensorFlow's
        # evaluate can produce one) then adds nothing.
        replicas = num_replicas_in_sync()
        batch_size = ops.cast(batch, "float32")
        self.masked_lm_accuracy.update_state(mlm_correct, sample_weight=weights)
        self.masked_lm_loss.update_state(mlm_loss * replicas, sample_weight=batch_size)
        # Every masked token's nll [B, P], weighted: exp of their mean over all evaluated tokens.
        self.masked_lm_perplexity.update_state(mlm_nll, sample_weight=weights)
        if self.next_sentence_head is not None:
            nsp_labels = ops.reshape(ops.cast(y["next_sentence_labels"], "int32"), (-1,))
            nsp_correct = ops.cast(
                ops.equal(ops.argmax(y_pred["next_sentence_logits"], axis=-1), nsp_labels), "float32"
            )
            self.next_sentence_accuracy.update_state(
                nsp_correct, sample_weight=losses.example_weights(sample_weight, batch, "next_sentence_labels"))
            self.next_sentence_loss.update_state(nsp_loss * replicas, sample_weight=batch_size)
        # Keras adds up the replicas' gradients and reports loss * replicas averaged: both exact for shares.
        return total

    def _compute_next_token_loss(self, y, y_pred, sample_weight):
        loss, nll, token_weights = self.next_token_losses(y, y_pred, sample_weight)
        ids = ops.cast(y["next_token_ids"], "int32")  # [B, T]
        correct = ops.cast(ops.equal(ops.cast(ops.argmax(y_pred["lm_logits"], axis=-1), "int32"), ids), "float32")
        batch_size = ops.cast(ops.shape(ids)[0], "float32")
        self.lm_accuracy.update_state(correct, sample_weight=token_weights)
        self.lm_loss.update_state(loss * num_replicas_in_sync(), sample_weight=batch_size)
        self.lm_perplexity.update_state(nll, sample_weight=token_weights)
        return loss

    # ------------------------------------------------------------------------------ serialization
    def task_config(self):
        return {"objective": self.objective}

    @classmethod
    def pretrained_preprocessor(cls, path, preprocessor="auto", **arguments):
        """`BertTaskModel.pretrained_preprocessor`, but none by default for objective "ltr": the masked-LM
        preprocessor does not make next-token targets."""
        if arguments.get("objective") == "ltr" and isinstance(preprocessor, str) and preprocessor == "auto":
            return None
        return super().pretrained_preprocessor(path, preprocessor, **arguments)

    def saved_architecture(self):
        """The Hugging Face class of the objective (`PRETRAINING_ARCHITECTURES`)."""
        return PRETRAINING_ARCHITECTURES[self.objective]

    def head_tables(self):
        tables = {"masked-LM": model_io.masked_lm_table(self.masked_lm_head)}
        if self.next_sentence_head is not None:
            tables["next-sentence"] = model_io.next_sentence_table(self.next_sentence_head)
        return tables


def _masked_lm_head(backbone):
    """The masked-LM head on `backbone`, its output layer tied to the word embeddings (every objective's)."""
    config = backbone.config
    return MaskedLMHead(
        backbone.token_embedding,
        hidden_act=config.hidden_act,
        layer_norm_eps=config.layer_norm_eps,
        initializer_range=config.initializer_range,
        dtype=backbone.dtype_policy,
        name="masked_lm_head",
    )


def _masked_lm_graph(backbone, objective):
    """(inputs, outputs, masked-LM head, next-sentence head or None) of the masked-LM model of `objective`:
    `masked_lm_logits` at `masked_lm_positions`, and with "mlm_nsp" / "sop" `next_sentence_logits`."""
    # === Layers ===
    masked_lm_head = _masked_lm_head(backbone)
    has_nsp = objective in ("mlm_nsp", "sop")
    next_sentence_head = dense_head(2, backbone, name="next_sentence_head")[1] if has_nsp else None

    # === Functional graph ===
    inputs = dict(backbone.input)
    inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
    backbone_outputs = backbone({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    masked_lm_logits = masked_lm_head(backbone_outputs["sequence_output"], inputs["masked_lm_positions"])
    outputs = {"masked_lm_logits": masked_lm_logits}
    if has_nsp:
        outputs["next_sentence_logits"] = keras.layers.Activation(
            "linear", dtype="float32", name="next_sentence_logits"
        )(next_sentence_head(backbone_outputs["pooled_output"]))
    return inputs, outputs, masked_lm_head, next_sentence_head


def _left_to_right_graph(backbone):
    """(inputs, outputs, LM head, None) of the "ltr" model: `lm_logits` [batch, seq, vocab] from the masked-LM
    head at every position."""
    lm_head = _masked_lm_head(backbone)
    inputs = dict(backbone.input)
    lm_logits = lm_head(backbone(inputs)["sequence_output"])  # [batch, seq, vocab]
    return inputs, {"lm_logits": lm_logits}, lm_head, None


def load_pretraining_head_weights(model, head_weights, source="checkpoint"):
    """Assigns `cls.predictions.*` / `cls.seq_relationship.*` weights; returns the names of absent heads."""
    return model.load_head_weights(head_weights, source, warn=False)
