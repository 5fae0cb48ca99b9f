"""BertClassifier: sequence classification (and, with one output, regression) on the [CLS] summary.

The head of the original run_classifier.py and of Hugging Face's BertForSequenceClassification:

    logits = Dense(num_classes)(dropout(pooled_output))        # [batch, num_classes], float32

`num_classes=1` is the regression variant (STS-B): the single logit is the predicted score, trained
with mean squared error. There is no separate BertRegressor class.
"""


import keras
import numpy as np

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.task_model import BertTaskModel, dense_head
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.preprocessors.text_classifier_preprocessor import BertTextClassifierPreprocessor
from keras_bert_impl.utils.errors import UserInputError


@model_io.register_model
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertClassifier(BertTaskModel):
    """A `BertBackbone` with a dropout + dense head on `pooled_output`: logits for each class.

    Inputs: the backbone's dict {`token_ids`, `segment_ids`, `padding_mask`}, int32 [batch, seq]
    (one packed `[CLS] A [SEP] (B [SEP])` sequence per example, any padding).
    Output: logits, float32 [batch, num_classes] (before softmax). With `num_classes=1` the output
    [batch, 1] is a regression score (STS-B).

    `compile()` without arguments trains with `SparseCategoricalCrossentropy(from_logits=True)` and
    reports accuracy (regression: `MeanSquaredError`), with the paper's AdamW (see `BertTaskModel.compile`).

    Args:
        backbone: a `BertBackbone`.
        num_classes: number of classes (1 for regression).
        dropout: dropout rate before the dense layer (the original's 0.1).
        **kwargs: `preprocessor` (below) and the arguments of `BertTaskModel`.

    Keyword Args:
        preprocessor: a `BertTextClassifierPreprocessor`, for raw text in fit/evaluate/predict (or None).

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertClassifier(BertBackbone(BertConfig.preset("bert_tiny")), num_classes=3)
    >>> logits = model({
    ...     "token_ids": keras.ops.ones((2, 8), "int32"),
    ...     "segment_ids": keras.ops.zeros((2, 8), "int32"),
    ...     "padding_mask": keras.ops.ones((2, 8), "int32"),
    ... })
    >>> tuple(logits.shape)
    (2, 3)

    Fine-tune from a checkpoint with `BertClassifier.from_pretrained(path, num_classes=2)`; write a
    Hugging Face BertForSequenceClassification directory with `save_pretrained(directory)`.
    """

    preprocessor_class = BertTextClassifierPreprocessor

    def __init__(self, backbone, num_classes, dropout=0.1, **kwargs):
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
        # === Layers ===
        output_dropout, output_dense = dense_head(num_classes, backbone, dropout)

        # === Functional graph ===
        inputs = dict(backbone.input)
        # The backbone's layers wired directly (not the nested model): the last layer runs at [CLS] only.
        pooled = backbone.pooled_output(inputs)  # [B, H]
        logits = output_dense(output_dropout(pooled))  # [B, num_classes]
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.output_dropout = output_dropout
        self.output_dense = output_dense

    def task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

    def check_labels(self, y):
        """Class ids 0..num_classes-1 (ints; a float, a str, None or an id out of range is refused, naming its
        index); regression (`num_classes=1`): finite numbers."""
        if self.num_classes == 1:
            return input_checks.check_targets(y)
        return input_checks.check_label_ids(y, self.num_classes)

    def check_inputs(self, x, y):
        """One label per example."""
        if y is not None:
            input_checks.check_num_examples(y, x)

    def default_loss(self):
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return None if self.num_classes == 1 else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    @classmethod
    def from_pretrained(cls, path, num_classes=None, dropout=0.1, dtype=None, preprocessor="auto",
                        ignore_stored_head=False, **config_overrides):
        """A classifier on a checkpoint's backbone, with its classification head when it has one.

        Reads Hugging Face BertForSequenceClassification directories (`classifier.weight` [C, H],
        `classifier.bias` [C]), Google run_classifier.py checkpoints (`output_weights`,
        `output_bias`) and keras-hub BertTextClassifier presets (its `logits` Dense). A checkpoint without those weights (a plain BertModel) gets a randomly
        initialized head, with a warning. `save_pretrained(directory, label_names=None)` writes a
        BertForSequenceClassification directory.

        Args:
            path: a checkpoint directory or Google checkpoint prefix (see `BertBackbone.from_pretrained`).
            num_classes: number of classes (1 for regression); must match a stored head. Default: the stored
                head's (a checkpoint without one needs it).
            dropout: dropout rate of the head.
            dtype: dtype policy for every layer.
            preprocessor: "auto": the directory's vocabulary as the model's preprocessor when it holds
                one (else none); or a preprocessor, or None.
            ignore_stored_head: load the backbone alone and start a new head, also from another task's
                directory (which is refused otherwise; see `BertTaskModel.pretrained_backbone`).
            **config_overrides: backbone config fields to replace (e.g. `hidden_dropout_prob`).

        Raises:
            ValueError: the stored head's shape does not match `num_classes` and the hidden size.
        """
        checkpoint, backbone = cls.pretrained_backbone(path, ignore_stored_head, dtype=dtype, **config_overrides)
        if num_classes is None:
            if "classifier.weight" not in backbone.head_weights:
                raise UserInputError(f"{checkpoint.path}: no classifier weights in the checkpoint; pass num_classes.")
            num_classes = int(np.asarray(backbone.head_weights["classifier.weight"]).shape[0])
        model = cls(backbone, num_classes=num_classes, dropout=dropout,
                    preprocessor=cls.pretrained_preprocessor(checkpoint, preprocessor))
        model.load_head_weights(backbone.head_weights, source=checkpoint.path)
        return model

    def save_to_preset(self, directory, tokenizer=None, allow_gelu_approximation=False):
        """Writes a keras-hub BertTextClassifier task preset (backbone, head, and the tokenizer: `tokenizer`,
        else the preprocessor's when the model has one).

        `keras_hub.models.BertTextClassifier.from_preset(directory)` loads it, and so does
        `BertClassifier.from_pretrained(directory, num_classes)`; see `BertBackbone.save_to_preset`.
        """
        if tokenizer is None and self.preprocessor is not None:
            tokenizer = self.preprocessor.tokenizer
        model_io.save_keras_hub_preset(self, directory, tokenizer=tokenizer, classifier=(self.num_classes, self.dropout),
                                       allow_gelu_approximation=allow_gelu_approximation)
