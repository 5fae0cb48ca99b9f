"""keras_bert_impl: BERT (Devlin et al., 2018) for Keras 3 on the TensorFlow, JAX and PyTorch backends."""

__version__ = "0.1.0"
