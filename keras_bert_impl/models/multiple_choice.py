"""BertMultipleChoice: one score per choice (SWAG), as Hugging Face's BertForMultipleChoice.

Each choice is packed as its own sequence `[CLS] context [SEP] ending [SEP]`; all choices of all
examples go through the backbone as one batch [batch * num_choices, seq], and a Dense(1) on each
choice's pooled output gives a score:

    scores = Dense(1)(dropout(pooled_output))     # [batch * num_choices, 1]
    logits = reshape(scores, [batch, num_choices])  # softmax across choices is in the loss
"""

import keras
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.data import class_scores
from keras_bert_impl.data.swag_data import NUM_CHOICES
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.stored_settings import ConfigEntry
from keras_bert_impl.models.task_model import BertTaskModel, dense_head
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.preprocessors.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert_impl.utils.errors import UserInputError

_INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


class MergeChoices(keras.layers.Layer):
    """[batch, num_choices, seq] -> [batch * num_choices, seq] (the sequence length known only at call time)."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, input_shape):
        batch, choices, seq = input_shape
        return (None if batch is None else batch * choices, seq)


@model_io.register_task(architectures=("BertForMultipleChoice",), pipeline="multiple-choice", serving="multiple_choice")
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMultipleChoice(BertTaskModel):
    """A `BertBackbone` scoring each of `num_choices` packed sequences; logits [batch, num_choices].

    Inputs: a dict {`token_ids`, `segment_ids`, `padding_mask`}, each int32 [batch, num_choices, seq],
    choice `c` of example `b` packed as `[CLS] context [SEP] ending_c [SEP]`.
    Output: logits, float32 [batch, num_choices]. `compile()` without arguments trains with
    `SparseCategoricalCrossentropy(from_logits=True)` on the index of the right choice and reports
    accuracy, with the paper's AdamW (see `BertTaskModel.compile`).

    Args:
        backbone: a `BertBackbone`.
        num_choices: choices per example (4 for SWAG).
        dropout: dropout rate before the scoring layer.
        **kwargs: `preprocessor` (below) and the arguments of `BertTaskModel`.

    Keyword Args:
        preprocessor: a `BertMultipleChoicePreprocessor`, for raw text in fit/evaluate/predict (or None).

    Examples:

    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertMultipleChoice(BertBackbone(BertConfig.preset("bert_tiny")), num_choices=4)
    >>> logits = model({
    ...     "token_ids": keras.ops.ones((2, 4, 8), "int32"),
    ...     "segment_ids": keras.ops.zeros((2, 4, 8), "int32"),
    ...     "padding_mask": keras.ops.ones((2, 4, 8), "int32"),
    ... })
    >>> tuple(logits.shape)
    (2, 4)

    `save_pretrained(directory)` writes a Hugging Face BertForMultipleChoice directory (`classifier.weight`
    [1, H], `classifier.bias` [1]) with `num_choices` in config.json; `from_pretrained(path)` reads its head
    (a checkpoint without one gets a random head, with a warning) and its `num_choices` (SWAG's 4 when the
    directory records none).
    """

    preprocessor_class = BertMultipleChoicePreprocessor
    stored_settings = (ConfigEntry("num_choices", default=NUM_CHOICES),)

    def __init__(self, backbone, num_choices, dropout=0.1, **kwargs):
        if int(num_choices) < 1:
            raise ValueError(f"num_choices must be >= 1, got {num_choices}.")
        num_choices = int(num_choices)
        # === Layers ===
        output_dropout, output_dense = dense_head(1, backbone, dropout)

        # === Functional graph ===
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in _INPUT_NAMES}
        merge = MergeChoices(name="merge_choices")
        flat = {name: merge(inputs[name]) for name in _INPUT_NAMES}  # [B*C, T]
        # The backbone's layers wired directly (not the nested model): the last layer runs at [CLS] only.
        pooled = backbone.pooled_output(flat)  # [B*C, H]
        scores = output_dense(output_dropout(pooled))  # [B*C, 1]
        logits = ops.reshape(scores, (-1, num_choices))  # [B, C]
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_choices = num_choices
        self.dropout = float(dropout)
        self.output_dropout = output_dropout
        self.output_dense = output_dense

    def task_config(self):
        return {"num_choices": self.num_choices, "dropout": self.dropout}

    def check_labels(self, y):
        """The index of the right choice of each example, an int in 0..num_choices-1."""
        return input_checks.check_label_ids(y, self.num_choices, what="the index of the right choice",
                                           count_name="num_choices")

    def check_inputs(self, x, y):
        """`num_choices` choices per example, one label per example."""
        shape = tuple(x["token_ids"].shape)
        if len(shape) != 3 or shape[1] != self.num_choices:
            choices = shape[1] if len(shape) == 3 else None
            raise UserInputError(f"x has {choices} choices per example (token_ids of shape {shape}); this "
                                 f"{type(self).__name__} scores num_choices={self.num_choices}.")
        if y is not None:
            input_checks.check_num_examples(y, x)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # ------------------------------------------------------------------------------ answers
    def predicted_classes(self, logits):
        """The index of the best choice [N] of each row of `logits` [N, C] (argmax, the first on a tie): run_swag.py's
        predictions (`data.class_scores.class_predictions`)."""
        return class_scores.class_predictions(logits)

    def scores(self, logits, function="softmax"):
        """The softmax over the choices [N, C] of `logits` [N, C] (`data.class_scores.class_scores`)."""
        return class_scores.class_scores(logits, function)

    # ------------------------------------------------------------------------------ model directories
    def head_tables(self):
        return {"classifier": model_io.classifier_table(self.output_dense)}
