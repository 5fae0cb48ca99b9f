"""BertClassifier: sequence classification (and, with one output, regression) on the [CLS] summary.

The head of the original run_classifier.py and of Hugging Face's BertForSequenceClassification:

    logits = Dense(num_classes)(dropout(pooled_output))        # [batch, num_classes], float32

`num_classes=1` is the regression variant (STS-B): the single logit is the predicted score, trained
with mean squared error. There is no separate BertRegressor class.
"""


import keras
import numpy as np

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.data import class_scores
from keras_bert_impl.data.text_classification_data import LONG_INPUT_KEY
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.stored_settings import ClassCount, StoredSetting
from keras_bert_impl.models.task_model import BertTaskModel, dense_head
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.preprocessors.text_classifier_preprocessor import BertTextClassifierPreprocessor


class ProblemType(StoredSetting):
    """transformers' `problem_type` of config.json: "regression" for one output, else
    "single_label_classification" (the output count itself is `ClassCount`'s)."""

    keys = ("problem_type",)

    def save(self, model, label_names=None):
        return {"problem_type": "regression" if model.num_classes == 1 else "single_label_classification"}


class LongInput(StoredSetting):
    """The preprocessor's `long_input` mode (run_glue.py's `--long_input`) as config.json's `long_input`, written
    when it is not "truncate"; `BertTextClassifierPreprocessor.from_pretrained` reads it back."""

    keys = (LONG_INPUT_KEY,)
    head = False

    def save(self, model, label_names=None):
        mode = getattr(model.preprocessor, "long_input", "truncate")
        return {} if mode == "truncate" else {LONG_INPUT_KEY: mode}


class ClassAnswers:
    """The answers of a model whose output is one row of class logits [N, C] per example (or per window of an
    example), as run_glue.py, the text-classification pipeline and the export's "classifier" / "regressor"
    kinds read them (`data.class_scores`): a head answered by that pipeline mixes it in (`BertClassifier` does).
    One output (`num_classes=1`) is a regression."""

    def example_logits(self, logits, example_index=None, num_examples=None, long_input=None):
        """Each example's logits [N, C] of the model's output rows `logits` (`data.class_scores.window_logits`):
        the rows themselves, or with `long_input` "mean" / "max" (None: the preprocessor's mode) the windows of
        each example (`example_index`: the example of each row, of `num_examples`) pooled."""
        if long_input is None:
            long_input = getattr(self.preprocessor, "long_input", "truncate")
        count = len(logits) if num_examples is None else num_examples
        return class_scores.window_logits(logits, example_index, count, long_input)

    def predicted_classes(self, logits):
        """The predicted class id [N] of each row of `logits` [N, C] (argmax, the first on a tie), or a regression's
        score [N] (`num_classes=1`): run_glue.py's predictions (`data.class_scores.class_predictions`)."""
        return class_scores.class_predictions(logits, regression=self.num_classes == 1)

    def scores(self, logits, function=None, regression=False):
        """The scores [N, C] a user reads of `logits` [N, C] (`data.class_scores.class_scores`): `function`
        "softmax", "sigmoid" or "none"; None: transformers' default for the model ("none" for a `regression`,
        "sigmoid" for one output, else "softmax")."""
        logits = np.asarray(logits, "float32")
        return class_scores.class_scores(logits, function or class_scores.default_function(logits.shape[-1], regression))

    def serving_kind(self):
        """"regressor" for one output (its export serves a score), else "classifier"."""
        return "regressor" if self.num_classes == 1 else "classifier"


@model_io.register_task(architectures=("BertForSequenceClassification",), pipeline="text-classification",
                        pipeline_aliases=("sentiment-analysis",), serving="classifier")
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertClassifier(ClassAnswers, BertTaskModel):
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
    Hugging Face BertForSequenceClassification directory with `save_pretrained(directory, label_names=None)`.
    `from_pretrained` reads the head of such directories (`classifier.weight` [C, H], `classifier.bias` [C]),
    of Google run_classifier.py checkpoints (`output_weights`, `output_bias`) and of keras-hub
    BertTextClassifier presets (its `logits` Dense); `num_classes` defaults to the stored head's. A checkpoint
    without a head (a plain BertModel) gets a random one, with a warning.
    """

    preprocessor_class = BertTextClassifierPreprocessor
    stored_settings = (ClassCount(), ProblemType(), LongInput())

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

    # ------------------------------------------------------------------------------ model directories
    def head_tables(self):
        return {"classifier": model_io.classifier_table(self.output_dense)}

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
