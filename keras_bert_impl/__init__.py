"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on the TensorFlow, JAX and PyTorch backends.

The public classes below are backend-neutral (keras and keras.ops only). What is TensorFlow by nature
(in-graph tokenization, tf.data pipelines, TFRecords, TF1 checkpoints, tf.distribute, SavedModel export)
lives in the `tf_*` modules, `tf1_checkpoint` and `distribute`, imported on demand.
"""

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.training.optimization import AdamWeightDecay, Lamb, WarmupLinearDecay, create_optimizer
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

__version__ = "0.1.0"

__all__ = [
    "AdamWeightDecay",
    "BertBackbone",
    "BertClassifier",
    "BertConfig",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSpanQA",
    "BertTokenizer",
    "Lamb",
    "WarmupLinearDecay",
    "create_optimizer",
]
