"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on the TensorFlow, JAX and PyTorch backends.

The subpackages form tiers; a module imports only from lower tiers (and, within a tier, only from its own
folder), which `tests/test_architecture.py` checks:

    utils, backends < config, metrics < layers, tokenizers < checkpoints < data < preprocessors < models
    < training < tasks < pipelines < export < runners

`backends/` holds the backend-specific fast paths: one function per operation (`backends.dense`,
`backends.attention`, ...) chooses the path, the fast paths are one module per backend, imported only under
that backend; everything else is keras and keras.ops only. The private Keras APIs the package relies on are in
`utils/keras_compat.py` only. What is TensorFlow by nature (in-graph tokenization,
tf.data pipelines, TFRecords, TF1 checkpoints, tf.distribute, SavedModel export) is in the modules named
`tf_*` and in `export/`, `training/distribute.py` and `checkpoints/tf1_checkpoint.py`, imported on demand.
The public classes below are backend-neutral; `pipeline(task, model)` answers raw inputs with a fine-tuned
model (`keras_bert_impl.pipelines`).
"""

import importlib
import os

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

# Set (to anything but "" or "0") by the recipes before they import the package: the exports are then imported
# on first use (PEP 562), or all at once by `import_exports()`, which `runners.cli.run_main` calls once the
# flags are parsed, so that `--help` and a flag's error answer without importing Keras and TensorFlow.
# Otherwise they are imported now, registering every class with Keras and with the model directory's registry
# (what loading a `.keras` file or a model directory needs).
LAZY_IMPORT_ENVIRONMENT_VARIABLE = "KERAS_BERT_IMPL_LAZY_IMPORT"


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'keras_bert_impl' has no attribute {name!r}")
    import_keras_quietly()  # TensorFlow's start-up lines off stderr (utils.tensorflow_logs)
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def import_exports():
    """Imports every export now (a no-op when they are)."""
    for name in _EXPORTS:
        __getattr__(name)


if os.environ.get(LAZY_IMPORT_ENVIRONMENT_VARIABLE, "") in ("", "0"):
    import_exports()

__version__ = "0.1.0"

# The public names: every export.
__all__ = sorted(_EXPORTS)
