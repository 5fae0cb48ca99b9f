"""The Keras layers BERT is built from; backend-neutral (keras and keras.ops only)."""

from keras_bert_impl.layers.attention import BertSelfAttention, attention_bias_from_padding_mask
from keras_bert_impl.layers.crf import CRF, crf_log_likelihood, crf_viterbi_decode
from keras_bert_impl.layers.dense import BertDense, BertEinsumDense
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.initializers import BertTruncatedNormal
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.layers.scalar_mix import ScalarMix
from keras_bert_impl.layers.sentence_pooling import SentencePooling
from keras_bert_impl.layers.transformer_encoder import BertEncoderBlock

__all__ = [
    "BertDense",
    "BertDropout",
    "BertEinsumDense",
    "BertEmbeddings",
    "BertEncoderBlock",
    "BertSelfAttention",
    "BertTruncatedNormal",
    "CRF",
    "MaskedLMHead",
    "ScalarMix",
    "SentencePooling",
    "attention_bias_from_padding_mask",
    "crf_log_likelihood",
    "crf_viterbi_decode",
]
