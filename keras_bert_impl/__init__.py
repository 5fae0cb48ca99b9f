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

from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers import (
    CRF,
    BertDense,
    BertDropout,
    BertEinsumDense,
    BertEmbeddings,
    BertEncoderBlock,
    BertSelfAttention,
    MaskedLMHead,
    ScalarMix,
)
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.pipelines import pipeline
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor
from keras_bert_impl.preprocessors.masked_lm_preprocessor import BertMaskedLMPreprocessor
from keras_bert_impl.preprocessors.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor
from keras_bert_impl.preprocessors.text_classifier_preprocessor import BertTextClassifierPreprocessor
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.training.divergence import DivergenceGuard
from keras_bert_impl.training.optimization import AdamWeightDecay, Lamb, WarmupLinearDecay, create_optimizer

__version__ = "0.1.0"

__all__ = [
    "AdamWeightDecay",
    "BertBackbone",
    "BertClassifier",
    "BertConfig",
    "BertDense",
    "BertDropout",
    "BertEinsumDense",
    "BertEmbeddings",
    "BertEncoderBlock",
    "BertFeatureBasedTagger",
    "BertMaskedLMPreprocessor",
    "BertMultipleChoice",
    "BertMultipleChoicePreprocessor",
    "BertPreprocessor",
    "BertPretrainer",
    "BertSelfAttention",
    "BertSpanQA",
    "BertSpanQAPreprocessor",
    "BertTextClassifierPreprocessor",
    "BertTokenClassifier",
    "BertTokenClassifierPreprocessor",
    "BertTokenizer",
    "CRF",
    "DivergenceGuard",
    "MaskedLMHead",
    "Lamb",
    "ScalarMix",
    "WarmupLinearDecay",
    "create_optimizer",
    "pipeline",
]
