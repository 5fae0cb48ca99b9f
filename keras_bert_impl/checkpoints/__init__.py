"""Checkpoints and model directories: reading and writing Hugging Face, Google TF1 and keras-hub checkpoints.

`model_directory` reads and writes a checkpoint on disk; `weight_tables` and `head_weights` tie each Keras
variable to its checkpoint name and layout; `task_registry` holds every model class with its names (Hugging
Face architectures, pipeline, serving kind) and says which class a directory holds; `model_io` is the models'
one door to all of it.
"""
