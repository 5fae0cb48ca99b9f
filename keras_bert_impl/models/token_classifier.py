"""BertTokenClassifier: BERT for token classification (named-entity recognition), optionally with a CRF.

Labelling convention (that of the paper's CoNLL-2003 setup and of Hugging Face's
BertForTokenClassification): a word's label sits on its FIRST WordPiece sub-token. Every other
position -- continuation sub-tokens (`##...`), `[CLS]`, `[SEP]`, padding and, with document context,
the context tokens around the sentence being predicted -- carries the label id `-100` and is left out
of the loss and the metrics. `label_mask = (labels != -100)` marks the predicted positions.

With `use_crf=True` a linear-chain CRF models the tag sequence of the WORDS: its potentials are the
logits at the first sub-token positions, gathered into a contiguous, left-aligned sequence
(`gather_word_positions`), so that the CRF's transitions link consecutive words, not a word and its
own continuation pieces or the padding. Training minimises the CRF negative log-likelihood (mean
over sequences); prediction is the Viterbi path, scattered back to the first sub-token positions.
"""


import keras
import numpy as np
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.checkpoints.model_io import CRF_TRANSITIONS_NAME
from keras_bert_impl.models.stored_settings import BilstmUnits, ClassCount, StoredSetting
from keras_bert_impl.layers.crf import CRF, crf_viterbi_decode
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models import losses
from keras_bert_impl.models.losses import IGNORE_LABEL_ID
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.models.task_model import BertTaskModel, bilstm_layer, dense_head, renamed_argument
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.utils.errors import UserInputError

# save_pretrained stores the CRF transitions as CRF_TRANSITIONS_NAME ("classifier.crf_transitions"): the
# "classifier." prefix keeps it among the head weights of `BertBackbone.from_pretrained`; transformers
# ignores it (an unexpected key).


def gather_word_positions(values, label_mask):
    """Moves the positions where `label_mask` is 1 to the front of the sequence, in order.

    Args:
        values: tensor [B, T, ...] (logits or labels).
        label_mask: [B, T] 0/1 mask of the word (first sub-token) positions.

    Returns:
        `(gathered, word_mask, order)`: `gathered` [B, T, ...] with the masked positions first (left
        aligned, the rest behind them), `word_mask` [B, T] float32 prefix mask of the real words,
        `order` [B, T] int32 the source position of every gathered entry.

    Examples:

    >>> values = keras.ops.convert_to_tensor([[10, 11, 12, 13]])
    >>> gathered, word_mask, order = gather_word_positions(values, [[0, 1, 0, 1]])
    >>> keras.ops.convert_to_numpy(gathered).tolist(), keras.ops.convert_to_numpy(word_mask).tolist()
    ([[11, 13, 10, 12]], [[1.0, 1.0, 0.0, 0.0]])
    """
    label_mask = ops.cast(ops.convert_to_tensor(label_mask), "int32")  # [B, T]
    seq_len = ops.shape(label_mask)[1]
    positions = ops.expand_dims(ops.arange(seq_len, dtype="int32"), 0)  # [1, T]
    # Sort key: a word position keeps its index, any other position goes behind all of them.
    keys = positions + (1 - label_mask) * seq_len  # [B, T], distinct values
    order = ops.cast(ops.argsort(keys, axis=1), "int32")  # [B, T]
    word_mask = ops.cast(ops.take_along_axis(label_mask, order, axis=1), "float32")  # [B, T]
    values = ops.convert_to_tensor(values)
    index = order
    for _ in range(len(values.shape) - 2):
        index = ops.expand_dims(index, -1)
    gathered = ops.take_along_axis(values, index, axis=1)
    return gathered, word_mask, order


def viterbi_numpy(potentials, transitions, start_transitions=None, end_transitions=None):
    """Best tag sequence of ONE sequence of word potentials [L, K] (L >= 1) under `transitions` [K, K].

    Returns:
        int32 array [L].
    """
    score = potentials[0] + (0.0 if start_transitions is None else start_transitions)  # [K]
    backpointers = []
    for t in range(1, len(potentials)):
        candidates = score[:, None] + transitions  # [K previous, K current]
        backpointers.append(np.argmax(candidates, axis=0))
        score = candidates.max(axis=0) + potentials[t]
    if end_transitions is not None:
        score = score + end_transitions
    path = [int(np.argmax(score))]
    for pointer in reversed(backpointers):
        path.append(int(pointer[path[-1]]))
    return np.array(path[::-1], "int32")


def decode_tags(logits, label_mask, transitions=None, start_transitions=None, end_transitions=None):
    """The tag rule of `BertTokenClassifier.decode` in `keras.ops`, traceable (a SavedModel's graph).

    Without `transitions`: the argmax at every position of `label_mask`. With them: the CRF's Viterbi path
    over the words (`gather_word_positions` of the logits at the positions of `label_mask`), put back at
    those positions. `BertTokenClassifier.decode` computes the same tags in numpy (`viterbi_numpy`).

    Args:
        logits: float [B, T, K].
        label_mask: [B, T] 0/1, the first sub-token positions of the words.
        transitions: None, or the CRF's transition scores [K, K].
        start_transitions, end_transitions: None, or the CRF's start / end scores [K].

    Returns:
        int32 tensor [B, T]: the tag ids at the positions of `label_mask`, -100 elsewhere.

    Examples:

    >>> logits = keras.ops.convert_to_tensor([[[0.0, 1.0], [5.0, 0.0], [0.0, 3.0]]])
    >>> keras.ops.convert_to_numpy(decode_tags(logits, [[1, 0, 1]])).tolist()
    [[1, -100, 1]]
    >>> switch = keras.ops.convert_to_tensor([[-9.0, 0.0], [0.0, -9.0]])  # a tag never repeats
    >>> keras.ops.convert_to_numpy(decode_tags(logits, [[1, 0, 1]], switch)).tolist()
    [[0, -100, 1]]
    """
    label_mask = ops.cast(ops.convert_to_tensor(label_mask), "int32")  # [B, T]
    logits = ops.cast(ops.convert_to_tensor(logits), "float32")  # [B, T, K]
    if transitions is None:
        tags = ops.cast(ops.argmax(logits, axis=-1), "int32")
    else:
        word_logits, word_mask, order = gather_word_positions(logits, label_mask)  # words first, in order
        word_tags, _ = crf_viterbi_decode(word_logits, transitions, word_mask, start_transitions, end_transitions)
        inverse = ops.cast(ops.argsort(order, axis=1), "int32")  # gathered index of every source position
        tags = ops.take_along_axis(ops.cast(word_tags, "int32"), inverse, axis=1)
    return ops.where(label_mask > 0, tags, ops.full_like(tags, IGNORE_LABEL_ID))


class Crf(StoredSetting):
    """`use_crf`, config.json's entry of that name (the CRF's transitions are the head weight
    `classifier.crf_transitions`): None given: whether the checkpoint has a CRF (the transitions, or the
    entry); False on a checkpoint with a CRF is refused (its transitions would be dropped)."""

    arguments = keys = ("use_crf",)

    def save(self, model, label_names=None):
        return {"use_crf": model.use_crf}

    def load(self, checkpoint, backbone, given):
        has_crf = CRF_TRANSITIONS_NAME in backbone.head_weights or bool(checkpoint.setting("use_crf", False))
        use_crf = given.get("use_crf")
        if use_crf is None:
            return {"use_crf": has_crf}
        if has_crf and not use_crf:
            raise UserInputError(
                f"{checkpoint.path}: the checkpoint has a CRF ({CRF_TRANSITIONS_NAME} / config.json use_crf); "
                "use_crf=False would drop its transitions. Pass use_crf=None (the checkpoint's) or True."
            )
        return {"use_crf": use_crf}

    def describe(self, checkpoint):
        return "with a CRF" if checkpoint.setting("use_crf") else None


@model_io.register_task(architectures=("BertForTokenClassification",), pipeline="token-classification",
                        pipeline_aliases=("ner",), serving="token_classifier")
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassifier(BertTaskModel):
    """BERT with a token-level classification layer: dropout + Dense(num_classes) on `sequence_output`
    (with `bilstm_units`: on a BiLSTM over `sequence_output`).

    Inputs: the backbone's dict {`token_ids`, `segment_ids`, `padding_mask`} ([batch, seq] int32).
    Output: `logits` [batch, seq, num_classes] (float32).

    Train with `model.fit(x, labels)` where `labels` [batch, seq] int holds the label id at the first
    sub-token of every word and `-100` everywhere else (see the module docstring). The loss is

    * without CRF: the mean cross-entropy over the labelled positions;
    * with CRF: the mean over sequences of the CRF negative log-likelihood of the word tag sequence.

    fit/evaluate also report `token_accuracy` (argmax accuracy over labelled positions, without CRF)
    or `crf_nll`. Compile with an optimizer only: `model.compile(optimizer=...)`.
    Predict tags with `model.decode(model.predict(x), label_mask)` (argmax, or Viterbi with the CRF).

    Args:
        backbone: a `BertBackbone`.
        num_classes: number of tags K (formerly `num_labels`, still accepted with a DeprecationWarning).
        dropout: dropout rate on `sequence_output` before the classification layer.
        use_crf: add a linear-chain CRF over the word sequence.
        bilstm_units: None (the original head), or the units per direction of a randomly initialized
            bidirectional LSTM between `sequence_output` and the dropout + classification layer (the paper's
            "+ BiLSTM", Table 5), masked by `padding_mask`: padded positions feed neither direction.
            `save_pretrained` stores its weights as `classifier.bilstm.*` and `bilstm_units` in config.json,
            which `from_pretrained` reads back; transformers' BertForTokenClassification cannot run it (no LSTM).

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertTokenClassifier(BertBackbone(BertConfig.preset("bert_tiny")), num_classes=5)
    >>> x = {"token_ids": keras.ops.ones((2, 8), "int32"), "segment_ids": keras.ops.zeros((2, 8), "int32"),
    ...      "padding_mask": keras.ops.ones((2, 8), "int32")}
    >>> tuple(model(x).shape)
    (2, 8, 5)

    Load a fine-tuned Hugging Face BertForTokenClassification with `from_pretrained(path)` (its
    `classifier.*` head; a plain BertModel or Google checkpoint gets a random one, with a warning; `num_classes`,
    `use_crf` and `bilstm_units` default to the checkpoint's, and `use_crf=False` on a checkpoint with a CRF or
    another `bilstm_units` than its BiLSTM's is refused). `save_pretrained(directory, label_names=None)` writes a
    BertForTokenClassification directory, the CRF transitions (with `use_crf`) as `classifier.crf_transitions`.
    """

    reads_pooled_output = False
    preprocessor_class = BertTokenClassifierPreprocessor
    stored_settings = (BilstmUnits(), Crf(), ClassCount())
    backbone_arguments = {"require_pooler": False}
    renamed_arguments = {"num_labels": "num_classes"}

    def __init__(self, backbone, num_classes=None, dropout=0.1, use_crf=False, bilstm_units=None, **kwargs):
        num_classes = renamed_argument(num_classes, kwargs, "num_labels", "num_classes", "BertTokenClassifier")
        if num_classes is None:
            raise TypeError("BertTokenClassifier needs num_classes, the number of tags.")
        # === Layers ===
        bilstm = bilstm_layer(bilstm_units)
        dropout_layer, classifier = dense_head(num_classes, backbone, dropout)
        crf = CRF(num_classes, dtype="float32", name="crf") if use_crf else None

        # === Functional graph ===
        inputs = {k: v for k, v in backbone.input.items() if k in ("token_ids", "segment_ids", "padding_mask")}
        sequence_output = backbone(inputs)["sequence_output"]  # [B, T, H]
        if bilstm is not None:
            sequence_output = bilstm(sequence_output, mask=ops.cast(inputs["padding_mask"], "bool"))  # [B, T, 2u]
        logits = classifier(dropout_layer(sequence_output))  # [B, T, K]
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        if crf is not None:
            logits = crf(logits)  # identity: the CRF only contributes its transition variables
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.use_crf = bool(use_crf)
        self.bilstm_units = None if bilstm is None else int(bilstm_units)
        self.bilstm = bilstm
        self.classifier = classifier
        self.crf = crf
        if use_crf:
            self.crf_nll = keras.metrics.Mean(name="crf_nll")
        else:
            self.token_accuracy = keras.metrics.Mean(name="token_accuracy")

    # ------------------------------------------------------------------------------------- loss
    def token_classification_loss(self, labels, logits, sample_weight=None):
        """The training loss (float32 scalar) of `labels` [B, T] (-100 = ignored) given `logits` [B, T, K];
        `sample_weight` [B] weights the examples (and, without the CRF, [B, T] the tokens)."""
        labels = ops.cast(labels, "int32")  # [B, T]
        if not self.use_crf:
            return losses.token_classification_loss(labels, logits, sample_weight)
        logits = ops.cast(logits, "float32")  # [B, T, K]
        label_mask = ops.cast(ops.not_equal(labels, IGNORE_LABEL_ID), "int32")  # [B, T]
        safe_labels = labels * label_mask  # -100 -> 0, masked out below
        word_logits, word_mask, _ = gather_word_positions(logits, label_mask)  # [B, T, K], [B, T]
        word_labels, _, _ = gather_word_positions(safe_labels, label_mask)  # [B, T]
        log_likelihood = self.crf.log_likelihood(word_logits, word_labels, word_mask)  # [B]
        if sample_weight is not None and len(sample_weight.shape) == 2 and sample_weight.shape[1] not in (1, None):
            raise ValueError("BertTokenClassifier(use_crf=True) weights whole sequences: sample_weight must be "
                             f"[batch] or [batch, 1], got shape {tuple(sample_weight.shape)}.")
        weights = losses.example_weights(sample_weight, ops.shape(log_likelihood)[0])  # [B]
        return -ops.mean(log_likelihood * weights)

    def check_labels(self, y):
        """Label ids 0..num_classes-1, or -100 for "no label", per word (raw text) or per token (token ids)."""
        return input_checks.check_tag_ids(y, self.num_classes)

    def check_inputs(self, x, y):
        input_checks.check_one_label_per_token(x, y)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = self.token_classification_loss(y, y_pred, sample_weight)
        if self.use_crf:
            self.crf_nll.update_state(loss)
        else:
            self.token_accuracy.update_state(*losses.token_hits(y, y_pred, sample_weight))
        return loss

    # ------------------------------------------------------------------------------- prediction
    def decode(self, logits, label_mask):
        """Predicted label ids [B, T] (numpy int32) at the word positions; -100 elsewhere.

        Args:
            logits: [B, T, K] (the model's output, e.g. from `model.predict`).
            label_mask: [B, T] 0/1, the first sub-token positions to predict.

        Returns:
            numpy int32 [B, T]: argmax (or, with the CRF, the Viterbi path over the words) at the
            positions of `label_mask`, -100 at the others.
        """
        label_mask = np.asarray(ops.convert_to_numpy(label_mask)).astype("int32")  # [B, T]
        logits = np.asarray(ops.convert_to_numpy(logits), "float32")  # [B, T, K]
        if not self.use_crf:
            tags = np.argmax(logits, axis=-1)
            return np.where(label_mask > 0, tags, IGNORE_LABEL_ID).astype("int32")
        # Viterbi on the host (numpy): the logits are there already, and an eager `keras.ops.scan` would
        # be re-traced for every batch on JAX. Same tags as `decode_tags`, which the SavedModel export
        # runs in its graph (tested equal in tests/test_tf_export.py).
        transitions = np.asarray(ops.convert_to_numpy(self.crf.transitions), "float32")  # [K, K]
        start = end = None
        if self.crf.use_start_end_transitions:
            start = np.asarray(ops.convert_to_numpy(self.crf.start_transitions), "float32")
            end = np.asarray(ops.convert_to_numpy(self.crf.end_transitions), "float32")
        tags = np.full(label_mask.shape, IGNORE_LABEL_ID, "int32")
        for b in range(len(logits)):
            positions = np.flatnonzero(label_mask[b])  # the words, in order
            if len(positions):
                tags[b, positions] = viterbi_numpy(logits[b, positions], transitions, start, end)
        return tags

    def decode_in_graph(self, logits, label_mask):
        """The tags of `decode` in `keras.ops`, traceable (`decode_tags`: what the SavedModel's graph runs):
        int32 [B, T], -100 outside `label_mask`."""
        if self.crf is None:
            return decode_tags(logits, label_mask)
        crf = self.crf
        return decode_tags(logits, label_mask, crf.transitions, crf.start_transitions, crf.end_transitions)

    # ------------------------------------------------------------------------------ serialization
    def task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout, "use_crf": self.use_crf,
                "bilstm_units": self.bilstm_units}

    def head_tables(self):
        tables = {"classifier": model_io.classifier_table(self.classifier)}
        if self.bilstm is not None:
            tables["BiLSTM"] = model_io.bilstm_table("classifier", self.bilstm)
        if self.crf is not None:
            tables["CRF"] = model_io.crf_table(self.crf)
        return tables
