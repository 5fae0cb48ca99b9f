"""BertSpanQA: BERT for extractive question answering (SQuAD v1.1 / v2.0), as in the original run_squad.py."""

import keras
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.data import squad_postprocessing
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.stored_settings import BilstmUnits, StoredSetting
from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor
from keras_bert_impl.models.task_model import BertTaskModel, bilstm_layer, dense_head
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.utils.errors import UserInputError


# The settings a fine-tuned span QA model answers with: the windows (the preprocessor's) and the answer rule,
# run_squad.py's flags of those names; config.json's "squad" entry records them.
DECODING_SETTINGS = ("version_2_with_negative", "null_score_diff_threshold", "max_answer_length", "n_best_size",
                     "doc_stride", "max_query_length")
# run_squad.py's defaults (`tasks.squad.SquadConfig`'s).
DECODING_DEFAULTS = {"version_2_with_negative": False, "null_score_diff_threshold": 0.0, "max_answer_length": 30,
                     "n_best_size": 20, "doc_stride": 128, "max_query_length": 64}
DECODING_KEY = "squad"


def decoding_settings(stored=None, **given):
    """The windows' and the answers' settings of a span QA model: those `given` (not None) first, then the
    model's (`stored`: e.g. config.json's "squad" entry), then run_squad.py's defaults (`DECODING_DEFAULTS`).

    Neither given nor stored, `version_2_with_negative` is whether a null-score threshold is (given or stored).

    Returns:
        dict of `DECODING_SETTINGS`.

    Examples:

    >>> decoding_settings({"version_2_with_negative": True, "n_best_size": 7}, max_answer_length=5)["n_best_size"]
    7
    >>> decoding_settings(null_score_diff_threshold=1.0)["version_2_with_negative"]
    True
    """
    stored = stored or {}
    settings = {key: next(value for value in (given.get(key), stored.get(key), DECODING_DEFAULTS[key]) if value is not None)
                for key in DECODING_SETTINGS}
    if given.get("version_2_with_negative") is None and stored.get("version_2_with_negative") is None:
        settings["version_2_with_negative"] = any(
            source.get("null_score_diff_threshold") is not None for source in (given, stored))
    return settings


class SquadDecoding(StoredSetting):
    """config.json's "squad" entry: the model's `decoding` with its preprocessor's windows (`doc_stride`,
    `max_query_length`), written when there is one; `from_pretrained` takes it as `decoding` (a given one's
    settings replace the stored ones), and `BertSpanQAPreprocessor.from_pretrained` the windows."""

    arguments = ("decoding",)
    keys = (DECODING_KEY,)
    head = False

    def save(self, model, label_names=None):
        entry = dict(model.decoding or {})
        if model.preprocessor is not None:
            entry.update(model.preprocessor.task_config())
        return {DECODING_KEY: entry} if entry else {}

    def load(self, checkpoint, backbone, given):
        decoding = {**(checkpoint.setting(DECODING_KEY) or {}), **(given.get("decoding") or {})}
        return {"decoding": decoding or None}


@model_io.register_task(architectures=("BertForQuestionAnswering",), pipeline="question-answering", serving="span_qa")
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSpanQA(BertTaskModel):
    """A `BertBackbone` with the span head of the original run_squad.py: Dense(2) on every token.

    Inputs: the backbone's dict {`token_ids`, `segment_ids`, `padding_mask`}, int32 [batch, seq], laid out
    `[CLS] question [SEP] document [SEP] [PAD]...` (see `keras_bert_impl.data.squad_data`).
    Outputs, a dict of float32 tensors:
        start_logits: [batch, seq], the score of each token as the first token of the answer.
        end_logits: [batch, seq], the score of each token as the last token of the answer.

    Padding positions are NOT masked: like the original (`create_model` in run_squad.py) and transformers'
    `BertForQuestionAnswering`, the logits of [PAD] tokens are whatever the head computes. The
    post-processing never picks them (a span must lie in the document part of the feature), and the
    logits stay identical to transformers', which the tests check. Position 0 ([CLS]) is the "no answer in
    this feature" target.

    Loss (the original's): `(start_loss + end_loss) / 2`, each the mean cross-entropy over the batch of the
    softmax over all positions against the gold position. Targets for `fit` are the dict
    {`start_positions`, `end_positions`} of int [batch] (or [batch, 1]). `fit`/`evaluate` also report
    `start_loss`, `end_loss`, `start_accuracy` and `end_accuracy`. Compile with an optimizer only
    (`model.compile(optimizer=...)`).

    Args:
        backbone: a `BertBackbone`.
        bilstm_units: None (the original head), or the units per direction of a randomly initialized
            bidirectional LSTM between `sequence_output` and the span layer (the paper's "+ BiLSTM",
            Table 5), masked by `padding_mask`: padded positions feed neither direction (their LSTM outputs
            are zeros, so their logits are the span layer's bias). `save_pretrained` stores its weights as
            `qa_outputs.bilstm.*` and `bilstm_units` in config.json, which `from_pretrained` reads back;
            transformers' BertForQuestionAnswering cannot run it (no LSTM).
        decoding: None (run_squad.py's defaults), or a dict of the settings it answers with (`DECODING_SETTINGS`:
            SQuAD v2.0's `version_2_with_negative` and `null_score_diff_threshold`, `max_answer_length`,
            `n_best_size`; the windows' `doc_stride` and `max_query_length` when it has no preprocessor):
            `answers` and the question-answering pipeline decode with them, and `save_pretrained` records
            them in config.json's "squad" entry (with the preprocessor's windows).

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> x = {name: keras.ops.ones((2, 8), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
    >>> outputs = BertSpanQA(BertBackbone(BertConfig.preset("bert_tiny")))(x)
    >>> tuple(outputs["start_logits"].shape), tuple(outputs["end_logits"].shape)
    ((2, 8), (2, 8))

    Fine-tune a checkpoint with `BertSpanQA.from_pretrained(path)` (a SQuAD-fine-tuned Hugging Face
    `BertForQuestionAnswering` or Google checkpoint brings its head along: `qa_outputs.weight` [2, H],
    `qa_outputs.bias` [2], or `cls/squad/output_weights` and `output_bias`); a checkpoint without it gets a
    random head, with a warning. transformers saves `BertForQuestionAnswering` without a pooler, which span QA
    does not read: a checkpoint without one loads, its pooler keeping its initialization.
    `save_pretrained(directory)` writes a BertForQuestionAnswering directory.
    """

    reads_pooled_output = False
    preprocessor_class = BertSpanQAPreprocessor
    stored_settings = (BilstmUnits(), SquadDecoding())
    backbone_arguments = {"require_pooler": False}

    def __init__(self, backbone, bilstm_units=None, decoding=None, **kwargs):
        unknown = sorted(set(decoding or {}) - set(DECODING_SETTINGS))
        if unknown:
            raise ValueError(f"BertSpanQA decoding takes {', '.join(DECODING_SETTINGS)}; got {', '.join(unknown)}.")
        # === Layers ===
        bilstm = bilstm_layer(bilstm_units)
        _, qa_outputs = dense_head(2, backbone, name="qa_outputs")

        # === Functional graph ===
        inputs = dict(backbone.input)
        sequence_output = backbone(inputs)["sequence_output"]  # [B, T, H]
        if bilstm is not None:
            sequence_output = bilstm(sequence_output, mask=ops.cast(inputs["padding_mask"], "bool"))  # [B, T, 2u]
        logits = qa_outputs(sequence_output)  # [B, T, 2]
        start_logits = keras.layers.Activation("linear", dtype="float32", name="start_logits")(logits[:, :, 0])
        end_logits = keras.layers.Activation("linear", dtype="float32", name="end_logits")(logits[:, :, 1])
        super().__init__(inputs=inputs, outputs={"start_logits": start_logits, "end_logits": end_logits}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.bilstm_units = None if bilstm is None else int(bilstm_units)
        self.bilstm = bilstm
        self.qa_outputs = qa_outputs
        self.decoding = dict(decoding) if decoding else None
        self.add_mean_metrics("start_loss", "end_loss", "start_accuracy", "end_accuracy")

    # ------------------------------------------------------------------------------------- loss
    def span_losses(self, y, y_pred, sample_weight=None):
        """(total, start_loss, end_loss) as float32 scalars: the original's `(start + end) / 2`, each the
        mean over the examples of the cross-entropy times the example's `sample_weight` ([B], a dict of them
        under "start_positions" and "end_positions", or None)."""
        start_logits = ops.cast(y_pred["start_logits"], "float32")  # [B, T]
        end_logits = ops.cast(y_pred["end_logits"], "float32")  # [B, T]
        start_positions = ops.reshape(ops.cast(y["start_positions"], "int32"), (-1,))  # [B]
        end_positions = ops.reshape(ops.cast(y["end_positions"], "int32"), (-1,))  # [B]
        batch = ops.shape(start_positions)[0]
        start_nll = keras.losses.sparse_categorical_crossentropy(start_positions, start_logits, from_logits=True)
        end_nll = keras.losses.sparse_categorical_crossentropy(end_positions, end_logits, from_logits=True)
        start_loss = ops.mean(start_nll * losses.example_weights(sample_weight, batch, "start_positions"))
        end_loss = ops.mean(end_nll * losses.example_weights(sample_weight, batch, "end_positions"))
        return (start_loss + end_loss) / 2.0, start_loss, end_loss

    def check_inputs(self, x, y):
        """With token ids, `y` is {start_positions, end_positions}: token positions 0..seq-1 of each row (raw
        text's answers are checked by the preprocessor)."""
        if isinstance(y, dict):
            length = int(x["token_ids"].shape[-1])
            for key in ("start_positions", "end_positions"):
                if key not in y:
                    raise UserInputError(f"y has no {key!r}; expected the dict {{start_positions, end_positions}}.")
                input_checks.check_label_ids(y[key], length, f"y[{key!r}]", what="a token position")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        total, start_loss, end_loss = self.span_losses(y, y_pred, sample_weight)
        start_positions = ops.reshape(ops.cast(y["start_positions"], "int32"), (-1,))
        end_positions = ops.reshape(ops.cast(y["end_positions"], "int32"), (-1,))
        batch = ops.shape(start_positions)[0]
        start_hit = ops.cast(ops.equal(ops.argmax(y_pred["start_logits"], axis=-1), start_positions), "float32")
        end_hit = ops.cast(ops.equal(ops.argmax(y_pred["end_logits"], axis=-1), end_positions), "float32")
        self.start_loss.update_state(start_loss)
        self.end_loss.update_state(end_loss)
        self.start_accuracy.update_state(start_hit, losses.example_weights(sample_weight, batch, "start_positions"))
        self.end_accuracy.update_state(end_hit, losses.example_weights(sample_weight, batch, "end_positions"))
        return total

    # ------------------------------------------------------------------------------ answers
    def decoding_settings(self, **given):
        """The windows' and the answers' settings the model answers with (`decoding_settings`): those `given`
        (not None), then the model's (its preprocessor's `doc_stride` and `max_query_length`, its `decoding`),
        then run_squad.py's defaults."""
        stored = dict(self.decoding or {})
        if self.preprocessor is not None:
            stored.update(self.preprocessor.task_config())
        return decoding_settings(stored, **given)

    def span_logits(self, features, **options):
        """The `RawResult` (start and end logits cut to the window's tokens) of every window of `features`
        (`data.squad_postprocessing.predict_raw_results`; `options`: its batching and progress options)."""
        return squad_postprocessing.predict_raw_results(self, features, **options)

    def answers(self, examples, features, results, do_lower_case=None, **given):
        """The answers of `examples` from the `results` of their windows `features`: run_squad.py's rule
        (`data.squad_postprocessing.compute_predictions`) with the settings of `decoding_settings(**given)`;
        `do_lower_case` None: the preprocessor's tokenizer's (else True). Returns `SquadPredictions`."""
        settings = self.decoding_settings(**given)
        if do_lower_case is None:
            do_lower_case = True if self.preprocessor is None else self.preprocessor.tokenizer.do_lower_case
        return squad_postprocessing.compute_predictions(
            examples, features, results, n_best_size=int(settings["n_best_size"]),
            max_answer_length=int(settings["max_answer_length"]), do_lower_case=do_lower_case,
            version_2_with_negative=bool(settings["version_2_with_negative"]),
            null_score_diff_threshold=float(settings["null_score_diff_threshold"]))

    # ------------------------------------------------------------------------------ serialization
    def task_config(self):
        return {"bilstm_units": self.bilstm_units, "decoding": None if self.decoding is None else dict(self.decoding)}

    def head_tables(self):
        # Google's cls/squad/output_weights and output_bias are read as qa_outputs.weight and .bias.
        tables = {"qa_outputs": model_io.span_table(self.qa_outputs)}
        if self.bilstm is not None:
            tables["BiLSTM"] = model_io.bilstm_table("qa_outputs", self.bilstm)
        return tables
