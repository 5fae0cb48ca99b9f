"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on the TensorFlow, JAX and PyTorch backends.

The subpackages form tiers; a module imports only from lower tiers (and, within a tier, only from its own
folder), which `tests/test_architecture.py` checks:

    utils, backends < config, feature_modes, metrics < layers, tokenizers < checkpoints < data < preprocessors < models
    < training < tasks < pipelines < export < runners < experiments

`runners/` holds the recipes' logic (their flags, made from typed configs, and one run each); `experiments/`
the application above them: the ablation tables, planned as steps that run the recipes.

`backends/` holds the backend-specific fast paths: one function per operation (`backends.dense`,
`backends.attention`, ...) chooses the path, the fast paths are one module per backend, imported only under
that backend; everything else is keras and keras.ops only. The private Keras APIs the package relies on are in
`utils/keras_compat.py` only. What is TensorFlow by nature (in-graph tokenization,
tf.data pipelines, TFRecords, TF1 checkpoints, tf.distribute, SavedModel export) is in the modules named
`tf_*` and in `export/`, `training/distribute.py` and `checkpoints/tf1_checkpoint.py`, imported on demand.
The public classes below are backend-neutral; `pipeline(task, model)` answers raw inputs with a fine-tuned
model (`keras_bert_impl.pipelines`).

`import keras_bert_impl` imports none of the package's modules (nor Keras, TensorFlow, JAX or torch): an export
loads on first use (`keras_bert_impl.BertClassifier`, PEP 562's module `__getattr__`), so a recipe's `--help`
answers at once. A `.keras` file still loads after it: the package's Keras classes (`_KERAS_CLASSES`) are known
to Keras' registry as soon as Keras is imported, before or after the package, and load their modules when a
file names them (`utils/keras_registration.py`). The package's messages go to the logger "keras_bert_impl"
and its children, configured as any logger (the recipes show them as their one-line output:
`runners.cli.recipe_logging`).
"""

import importlib
import logging

from keras_bert_impl.utils import keras_registration, registering_modules

from keras_bert_impl.utils.tensorflow_logs import import_keras_quietly

# name -> the module that defines it: what `from keras_bert_impl import X` gives.
_EXPORTS = {
    "BertConfig": "keras_bert_impl.config",
    "CRF": "keras_bert_impl.layers",
    "BertDense": "keras_bert_impl.layers",
    "BertDropout": "keras_bert_impl.layers",
    "BertEinsumDense": "keras_bert_impl.layers",
    "BertEmbeddings": "keras_bert_impl.layers",
    "BertEncoderBlock": "keras_bert_impl.layers",
    "BertSelfAttention": "keras_bert_impl.layers",
    "BertTruncatedNormal": "keras_bert_impl.layers",
    "MaskedLMHead": "keras_bert_impl.layers",
    "ScalarMix": "keras_bert_impl.layers",
    "SentencePooling": "keras_bert_impl.layers",
    "BertBackbone": "keras_bert_impl.models.backbone",
    "BertClassifier": "keras_bert_impl.models.classifier",
    "BertFeatureBasedTagger": "keras_bert_impl.models.feature_based_tagger",
    "BertMultipleChoice": "keras_bert_impl.models.multiple_choice",
    "BertPretrainer": "keras_bert_impl.models.pretrainer",
    "BertSentenceEncoder": "keras_bert_impl.models.sentence_encoder",
    "CoSENTLoss": "keras_bert_impl.models.sentence_losses",
    "MultipleNegativesRankingLoss": "keras_bert_impl.models.sentence_losses",
    "SimCSELoss": "keras_bert_impl.models.sentence_losses",
    "BertSpanQA": "keras_bert_impl.models.span_qa",
    "BertTokenClassifier": "keras_bert_impl.models.token_classifier",
    "pipeline": "keras_bert_impl.pipelines",
    "BertPreprocessor": "keras_bert_impl.preprocessors.bert_preprocessor",
    "BertSentenceEncoderPreprocessor": "keras_bert_impl.preprocessors.sentence_encoder_preprocessor",
    "BertMaskedLMPreprocessor": "keras_bert_impl.preprocessors.masked_lm_preprocessor",
    "BertMultipleChoicePreprocessor": "keras_bert_impl.preprocessors.multiple_choice_preprocessor",
    "BertSpanQAPreprocessor": "keras_bert_impl.preprocessors.span_qa_preprocessor",
    "BertTextClassifierPreprocessor": "keras_bert_impl.preprocessors.text_classifier_preprocessor",
    "BertTokenClassifierPreprocessor": "keras_bert_impl.preprocessors.token_classifier_preprocessor",
    "BertTokenizer": "keras_bert_impl.tokenizers.bert_tokenizer",
    "semantic_search": "keras_bert_impl.tasks.semantic_search",
    "DivergenceGuard": "keras_bert_impl.training.divergence",
    "AdamWeightDecay": "keras_bert_impl.training.optimization",
    "Lamb": "keras_bert_impl.training.optimization",
    "WarmupLinearDecay": "keras_bert_impl.training.optimization",
    "OptimizerStepSchedule": "keras_bert_impl.training.optimization",
    "create_optimizer": "keras_bert_impl.training.optimization",
}

# The exports Keras saves and loads by their registered name "keras_bert_impl>Name": every class the package
# registers with `keras.saving.register_keras_serializable` (tests/test_serialization.py checks it).
_KERAS_CLASSES = (
    "CRF", "BertDense", "BertDropout", "BertEinsumDense", "BertEmbeddings", "BertEncoderBlock", "BertSelfAttention",
    "MaskedLMHead", "ScalarMix", "BertBackbone", "BertClassifier", "BertFeatureBasedTagger", "BertMultipleChoice",
    "BertPretrainer", "BertSpanQA", "BertTokenClassifier", "BertMaskedLMPreprocessor", "BertMultipleChoicePreprocessor",
    "BertSpanQAPreprocessor", "BertTextClassifierPreprocessor", "BertTokenClassifierPreprocessor", "AdamWeightDecay",
    "Lamb", "WarmupLinearDecay", "OptimizerStepSchedule", "SentencePooling", "BertSentenceEncoder",
    "BertSentenceEncoderPreprocessor", "CoSENTLoss", "MultipleNegativesRankingLoss", "SimCSELoss",
    "BertTruncatedNormal",
)


def __getattr__(name):
    """An export, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'keras_bert_impl' has no attribute {name!r}")
    import_keras_quietly()  # TensorFlow's start-up lines off stderr (utils.tensorflow_logs)
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_EXPORTS})


# A library's logger: no output of its own (the application, or the recipes' CLI, configures it).
logging.getLogger(__name__).addHandler(logging.NullHandler())
keras_registration.register_when_keras_is_imported({name: _EXPORTS[name] for name in _KERAS_CLASSES})
# Modules of upper tiers that fill a lower tier's registry when imported, imported when it first asks: the model
# classes (`checkpoints.task_registry`: the models package imports every module of models/) and the exporters of
# `model.export`'s formats (`models.portable_export`).
registering_modules.declare("task_models", {"models": "keras_bert_impl.models"})
registering_modules.declare("exporters", {"litert": "keras_bert_impl.export.tf_litert",
                                          "onnx": "keras_bert_impl.export.onnx_export"})

__version__ = "0.1.0"

# The public names: every export.
__all__ = sorted(_EXPORTS)
