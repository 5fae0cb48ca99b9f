"""A new head in one module, as docs/adding_a_task.md adds one: a classifier on the mean of the tokens'
features (not on [CLS]), reusing the text classifier's preprocessor. Everything the package does with a task
model comes from what this module declares: the registry entry (`register_task`: its Hugging Face
architecture, its pipeline, its serving kind), its heads' weight rows (`head_tables`) and what its directory
records (`stored_settings`); the answers are the classifiers' (`ClassAnswers`)."""

import keras
from keras import ops

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.models.classifier import ClassAnswers
from keras_bert_impl.models.stored_settings import ClassCount
from keras_bert_impl.models.task_model import BertTaskModel, dense_head
from keras_bert_impl.preprocessors.text_classifier_preprocessor import BertTextClassifierPreprocessor

ARCHITECTURE = "BertForToyMeanClassification"
PIPELINE_ALIAS = "toy-mean-classification"


@model_io.register_task(architectures=(ARCHITECTURE,), pipeline="text-classification",
                        pipeline_aliases=(PIPELINE_ALIAS,), serving="classifier")
@keras.saving.register_keras_serializable(package="tests")
class ToyMeanClassifier(ClassAnswers, BertTaskModel):
    """Logits of the mean of the real tokens' `sequence_output`: Dense(num_classes) on it, [batch, num_classes]."""

    reads_pooled_output = False  # the head reads the mean of the sequence output
    preprocessor_class = BertTextClassifierPreprocessor
    stored_settings = (ClassCount("classifier.toy_head.weight", "no toy head in the checkpoint"),)

    def __init__(self, backbone, num_classes, **kwargs):
        # === Layers ===
        _, dense = dense_head(num_classes, backbone, name="toy_head")

        # === Functional graph ===
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]  # [B, T, H]
        mask = ops.expand_dims(ops.cast(inputs["padding_mask"], sequence.dtype), -1)  # [B, T, 1]
        mean = ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)  # [B, H]
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(dense(mean))  # [B, C]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = int(num_classes)
        self.dense = dense

    def task_config(self):
        return {"num_classes": self.num_classes}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def head_tables(self):
        return {"toy head": model_io.dense_entries("classifier.toy_head", self.dense)}
