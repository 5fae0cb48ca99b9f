"""Google's original TF1 BERT checkpoints (bert_model.ckpt.*): reading and writing. TensorFlow by nature.

Reads with `tf.train.load_checkpoint` (no TF1 graph code) and translates the original variable names
(`bert/encoder/layer_0/attention/self/query/kernel`, ...) into the canonical Hugging Face names of
`keras_bert_impl.checkpoints.weight_tables`; writes the reverse with `tf.raw_ops.SaveV2`, so that our weights
can be read by google-research/bert's code too.
"""

import glob
import os
import re

import numpy as np

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("a Google TF1 checkpoint (checkpoints/tf1_checkpoint.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.checkpoints.checkpoint_files import CorruptCheckpointError
from keras_bert_impl.utils import file_io

# TF1 names that carry no model weight: training counters, Adam moments, loss-scale state.
_SKIPPED = re.compile(r"(^global_step$|/adam_[mv]$|^good_steps$|^current_loss_scale$|^loss_scale)")

# Names whose translation is not the generic rule below (the heads of the original scripts). Their
# TF1 layout is already Hugging Face's: output_weights are [out, in].
_SPECIAL = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",  # [2, H]
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    "output_weights": "classifier.weight",  # run_classifier.py: [num_labels, H]
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",  # run_squad.py: [2, H]
    "cls/squad/output_bias": "qa_outputs.bias",
}
_SPECIAL_INVERSE = {v: k for k, v in _SPECIAL.items()}


def tf1_to_canonical(tf1_name):
    """Original name -> (canonical name, transpose?), or None for a variable that is not a weight."""
    if _SKIPPED.search(tf1_name):
        return None
    if tf1_name in _SPECIAL:
        return _SPECIAL[tf1_name], False
    name = tf1_name[len("bert/") :] if tf1_name.startswith("bert/") else tf1_name
    name = re.sub(r"layer_(\d+)", r"layer.\1", name).replace("/", ".")
    if re.fullmatch(r"embeddings\.(word|position|token_type)_embeddings", name):
        return name + ".weight", False
    if name.endswith(".kernel"):
        return name[: -len(".kernel")] + ".weight", True  # [in, out] -> [out, in]
    if name.endswith(".gamma"):
        return name[: -len(".gamma")] + ".weight", False
    if name.endswith(".beta"):
        return name[: -len(".beta")] + ".bias", False
    return name, False


def canonical_to_tf1(name):
    """Canonical name -> (original name, transpose?), or None for a weight the original does not store."""
    if name in _SPECIAL_INVERSE:
        return _SPECIAL_INVERSE[name], False
    if name.startswith("cls.predictions.decoder."):
        return None  # tied to the word embeddings in the original
    m = re.fullmatch(r"embeddings\.(word|position|token_type)_embeddings\.weight", name)
    if m:
        return f"bert/embeddings/{m.group(1)}_embeddings", False
    prefix = "" if name.startswith("cls.") else "bert/"
    path = re.sub(r"layer\.(\d+)", r"layer_\1", name).replace(".", "/")
    if ".LayerNorm." in name:
        return prefix + path.replace("LayerNorm/weight", "LayerNorm/gamma").replace("LayerNorm/bias", "LayerNorm/beta"), False
    if path.endswith("/weight"):
        return prefix + path[: -len("/weight")] + "/kernel", True
    return prefix + path, False


def read_tf1_checkpoint(prefix):
    """Reads a TF1 checkpoint (e.g. `.../bert_model.ckpt`) into the canonical weight dict.

    Every tensor is read here, so TensorFlow's checksums (one per tensor in the `.index`) are verified.

    Raises:
        CorruptCheckpointError: naming the file (`.index` or `.data-*`) and what is wrong, when either is
            truncated, corrupt or not a checkpoint.
    """
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = reader.get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError) as e:
        raise CorruptCheckpointError(
            f"{prefix}.index: not a readable TensorFlow checkpoint: truncated or not a checkpoint index "
            f"({_first_line(e)})."
        ) from None
    weights = {}
    for tf1_name in sorted(names):
        translated = tf1_to_canonical(tf1_name)
        if translated is None:
            continue
        name, transpose = translated
        try:
            value = reader.get_tensor(tf1_name)
        except (tf.errors.OpError, ValueError, IndexError) as e:  # IndexError: "Read less bytes than requested"
            raise CorruptCheckpointError(
                f"{_data_files(prefix)}: truncated or corrupt TensorFlow checkpoint data (variable {tf1_name}: "
                f"{_first_line(e)})."
            ) from None
        weights[name] = value.T if transpose else value
    return weights


def _first_line(error):
    """The first line of a TensorFlow error's message (the rest repeats the call stack)."""
    message = getattr(error, "message", None) or str(error)
    return message.strip().split("\n")[0]


def _data_files(prefix):
    """The `.data-*` file name(s) of a checkpoint prefix, for messages."""
    found = sorted(tf.io.gfile.glob(glob.escape(prefix) + ".data-*"))
    return ", ".join(found) if found else prefix + ".data-*"


def write_tf1_checkpoint(weights, prefix):
    """Writes a canonical weight dict as a TF1 checkpoint with the original variable names.

    The result (`prefix.index`, `prefix.data-00000-of-00001`) is what google-research/bert's
    `init_checkpoint` reads, and what `BertBackbone.from_pretrained` reads back. Both files are written
    under a temporary prefix and renamed, the `.index` (which makes the checkpoint visible) last, after
    any older `.index` is removed: a run killed while writing leaves no checkpoint that looks whole.

    Examples:

    >>> import os, tempfile
    >>> import numpy as np
    >>> prefix = os.path.join(tempfile.mkdtemp(), "bert_model.ckpt")
    >>> write_tf1_checkpoint({"pooler.dense.bias": np.ones(4, "float32")}, prefix)
    >>> sorted(os.listdir(os.path.dirname(prefix)))
    ['bert_model.ckpt.data-00000-of-00001', 'bert_model.ckpt.index']
    >>> read_tf1_checkpoint(prefix)["pooler.dense.bias"]
    array([1., 1., 1., 1.], dtype=float32)
    """
    names, tensors = [], []
    for name, value in sorted(weights.items()):
        translated = canonical_to_tf1(name)
        if translated is None:
            continue
        tf1_name, transpose = translated
        value = np.asarray(value, dtype="float32")
        names.append(tf1_name)
        tensors.append(tf.constant(np.ascontiguousarray(value.T if transpose else value)))
    prefix = os.fspath(prefix)
    if file_io.is_remote(prefix):  # gs://...: no rename there; TensorFlow writes the files in place
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
        return
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    tmp_prefix = os.path.join(directory, f".tmp-{os.getpid()}-{os.path.basename(prefix)}")
    try:
        tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
        if os.path.lexists(prefix + ".index"):
            os.remove(prefix + ".index")
        for tmp_file in sorted(glob.glob(glob.escape(tmp_prefix) + ".data-*")):
            os.replace(tmp_file, prefix + tmp_file[len(tmp_prefix) :])
        os.replace(tmp_prefix + ".index", prefix + ".index")
    finally:
        for leftover in glob.glob(glob.escape(tmp_prefix) + ".*"):
            os.remove(leftover)
