"""Reading data files from local paths and from cloud storage (`gs://...`, as on Colab TPUs).

Local paths use Python's `open`. A path with a URL scheme (`gs://bucket/glue/SST-2/train.tsv`) is read
through TensorFlow's `tf.io.gfile`, which is TensorFlow by nature: it is imported only for such paths, so
the readers stay usable without TensorFlow for local files.
"""

import os


def is_remote(path):
    """Whether `path` is a URL (`gs://`, `s3://`, `hdfs://`...) rather than a local path."""
    return "://" in str(path)


def open_text(path, newline=None):
    """A text file object (UTF-8) for reading `path`, local or remote."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "r")
    return open(path, encoding="utf-8", newline=newline)


def join(directory, name):
    """`os.path.join` that keeps a URL's slashes."""
    if is_remote(directory):
        return directory.rstrip("/") + "/" + name
    return os.path.join(directory, name)


def isfile(path):
    """`os.path.isfile` for local paths, `tf.io.gfile.exists` (and not a directory) for URLs."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
    return os.path.isfile(path)
