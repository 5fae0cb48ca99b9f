"""BertSpanQA: BERT for extractive question answering (SQuAD v1.1 / v2.0), as in the original run_squad.py."""

import keras
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.models import losses
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor
from keras_bert_impl.models.task_model import BertTaskModel, bilstm_layer, dense_head
from keras_bert_impl.models.token_classifier import stored_bilstm_units
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.utils.errors import UserInputError


@model_io.register_model
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

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> x = {name: keras.ops.ones((2, 8), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
    >>> outputs = BertSpanQA(BertBackbone(BertConfig.preset("bert_tiny")))(x)
    >>> tuple(outputs["start_logits"].shape), tuple(outputs["end_logits"].shape)
    ((2, 8), (2, 8))

    Fine-tune a checkpoint with `BertSpanQA.from_pretrained(path)` (a SQuAD-fine-tuned Hugging Face
    `BertForQuestionAnswering` or Google checkpoint brings its head along).
    """

    preprocessor_class = BertSpanQAPreprocessor

    def __init__(self, backbone, bilstm_units=None, **kwargs):
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
        # The head does not read the pooler: it is frozen, so that no optimizer looks for its gradients
        # (transformers builds this model without one); its weights are kept and saved as read.
        backbone.pooler.trainable = False

        # === Config ===
        self.backbone = backbone
        self.bilstm_units = None if bilstm is None else int(bilstm_units)
        self.bilstm = bilstm
        self.qa_outputs = qa_outputs
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

    # ------------------------------------------------------------------------------ serialization
    def task_config(self):
        return {"bilstm_units": self.bilstm_units}

    @classmethod
    def from_pretrained(cls, path, dtype=None, preprocessor="auto", bilstm_units=None, ignore_stored_head=False,
                        **config_overrides):
        """A span-QA model on a checkpoint's backbone, with its `qa_outputs` head when it has one.

        Reads Hugging Face `BertForQuestionAnswering` directories (`qa_outputs.weight` [2, H],
        `qa_outputs.bias` [2]), Google SQuAD checkpoints (`cls/squad/output_weights`, `output_bias`) and
        directories written by `save_pretrained`. Without a head in the checkpoint (a plain pretrained
        model) the head keeps its random initialization, with a warning.

        transformers saves `BertForQuestionAnswering` without a pooler (`add_pooling_layer=False`); the
        pooler is unused by span QA, so when the checkpoint lacks it, it keeps its initialization (see
        `require_pooler=False`). `save_pretrained(directory)` writes a BertForQuestionAnswering directory.

        Args:
            path: a checkpoint directory or Google checkpoint prefix (see `BertBackbone.from_pretrained`).
            dtype: dtype policy for every layer.
            bilstm_units: the BiLSTM of the head; None: the checkpoint's (config.json's `bilstm_units`, none
                when absent). A checkpoint with a BiLSTM loads only with its own units (else ValueError).
            ignore_stored_head: load the backbone alone and start a new head, also from another task's
                directory (which is refused otherwise; see `BertTaskModel.pretrained_backbone`).
            **config_overrides: config fields to replace, e.g. `hidden_dropout_prob=0.0`.
        """
        checkpoint, backbone = cls.pretrained_backbone(path, ignore_stored_head, dtype=dtype, require_pooler=False,
                                                       **config_overrides)
        bilstm_units = stored_bilstm_units(checkpoint, bilstm_units)
        model = cls(backbone, bilstm_units=bilstm_units,
                    preprocessor=cls.pretrained_preprocessor(checkpoint, preprocessor))
        model.load_head_weights(backbone.head_weights, source=checkpoint.path)
        return model

