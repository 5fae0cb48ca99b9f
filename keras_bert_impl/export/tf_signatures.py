"""Traced functions saved as a SavedModel's signatures. TensorFlow by nature.

`save_signatures` saves concrete functions as the signatures of a `tf.Module` that tracks the resources they
need (a tokenizer's lookup tables) and the variables they read, each variable once: each function is traced
once, by its caller, and nothing else is traced while saving (Keras' `ExportArchive` walks the model's
layers and traces the endpoint again).
"""

import tensorflow as tf


def save_signatures(directory, signatures, **resources):
    """Writes the SavedModel `directory` whose signatures are `signatures` ({name: concrete function}) and
    whose root tracks `resources` (attribute name -> trackable, e.g. `tokenizer=...`) and the variables the
    functions read."""
    root = tf.Module()
    for name, resource in resources.items():
        setattr(root, name, resource)
    root.model_variables = list({id(v): v for f in signatures.values() for v in f.variables}.values())
    tf.saved_model.save(root, directory, signatures=signatures)
