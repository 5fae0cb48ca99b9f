"""Checkpoint files read whole or not at all: a truncated or corrupt file raises `CorruptCheckpointError`,
one line naming the file and what is wrong, instead of a library error that names neither.

Covers the files a run reads weights from: Hugging Face `model.safetensors` (its header is checked against
the file's size before reading), `pytorch_model.bin`, and Keras `.weights.h5` files (`load_keras_weights`).
Google's TF1 checkpoints are checked by `keras_bert_impl.checkpoints.tf1_checkpoint`, which raises the same
error.
"""

import hashlib
import json
import os
import struct

import numpy as np

from keras_bert_impl.utils.errors import UserInputError


class CorruptCheckpointError(UserInputError):
    """A checkpoint file that cannot be read whole: truncated, overwritten, or of another format.

    Examples:

    >>> try:
    ...     raise CorruptCheckpointError("out/model.safetensors: truncated (header says 90.0 MB, file has 1.0 MB).")
    ... except ValueError as error:
    ...     print(error)
    out/model.safetensors: truncated (header says 90.0 MB, file has 1.0 MB).
    """


def format_size(num_bytes):
    """A byte count as people read it: bytes below 10 kB, else kB / MB / GB with one decimal.

    Examples:

    >>> format_size(812), format_size(16_496), format_size(90_000_000)
    ('812 bytes', '16.5 kB', '90.0 MB')
    """
    if num_bytes < 10_000:
        return f"{num_bytes} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit}"


# ------------------------------------------------------------------------------------------ safetensors
def safetensors_header(path):
    """The JSON header of a safetensors file, after checking that the file holds every byte it announces.

    A safetensors file is an 8-byte little-endian header length N, N bytes of JSON (`{name: {"dtype",
    "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`), then the tensors' bytes; its size is
    8 + N + the largest `end`.

    Raises:
        CorruptCheckpointError: the file is shorter (or longer) than its header says, or not safetensors.

    Examples:

    >>> import os, tempfile
    >>> import numpy as np
    >>> from safetensors.numpy import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> save_file({"w": np.zeros((256, 64), "float32")}, path)
    >>> safetensors_header(path)["w"]["shape"]
    [256, 64]
    >>> _ = os.truncate(path, 4000)
    >>> try:
    ...     safetensors_header(path)
    ... except CorruptCheckpointError as error:
    ...     print(str(error).replace(path, "model.safetensors"))
    model.safetensors: truncated or not a safetensors file (header says 65.6 kB, file has 4000 bytes).
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise CorruptCheckpointError(
                f"{path}: truncated or not a safetensors file (file has {format_size(size)}, "
                "fewer than the 8 bytes of the header length)."
            )
        (header_length,) = struct.unpack("<Q", prefix)  # N
        if 8 + header_length > size:
            raise CorruptCheckpointError(
                f"{path}: truncated or not a safetensors file (header length says at least "
                f"{format_size(8 + header_length)}, file has {format_size(size)})."
            )
        try:
            header = json.loads(f.read(header_length).decode("utf-8"))
            if not isinstance(header, dict):
                raise ValueError("not a JSON object")
            data_length = max(
                [int(entry["data_offsets"][1]) for name, entry in header.items() if name != "__metadata__"],
                default=0,
            )
        except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
            raise CorruptCheckpointError(
                f"{path}: not a safetensors file or its header is corrupt (the {header_length} bytes after "
                "the header length are not a JSON table of tensors)."
            ) from None
    expected = 8 + header_length + data_length
    if expected != size:
        problem = "truncated or not a safetensors file" if expected > size else "has trailing bytes or is corrupt"
        raise CorruptCheckpointError(
            f"{path}: {problem} (header says {format_size(expected)}, file has {format_size(size)})."
        )
    return header


# The safetensors metadata entry holding `weights_digest` of the file's tensors (written by
# `model_directory.write_weights_and_config`; files without it, such as Hugging Face's, are read unchecked).
DIGEST_METADATA_KEY = "keras_bert_impl_sha256"


def weights_digest(weights):
    """SHA-256 (hex) of a {name: numpy array} dict: every name, dtype, shape and the bytes, in name order.

    Examples:

    >>> import numpy as np
    >>> a = weights_digest({"w": np.zeros(3, "float32")})
    >>> a == weights_digest({"w": np.zeros(3, "float32")}), a == weights_digest({"w": np.ones(3, "float32")})
    (True, False)
    """
    digest = hashlib.sha256()
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode("utf-8"))
        digest.update(array.tobytes())
    return digest.hexdigest()


def read_safetensors(path):
    """{name: numpy array} of a safetensors file, its size checked first (`safetensors_header`), and its
    tensors checked against the `weights_digest` in its metadata when it has one (files this package
    writes), so that bytes overwritten inside the file are not loaded as weights.

    Raises:
        CorruptCheckpointError: naming the file, when it is truncated, not safetensors, or its tensors do
            not match their digest.

    Examples:

    >>> import os, tempfile
    >>> import numpy as np
    >>> from safetensors.numpy import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> save_file({"w": np.arange(3, dtype="float32")}, path)
    >>> read_safetensors(path)["w"]
    array([0., 1., 2.], dtype=float32)
    """
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    header = safetensors_header(path)
    try:
        weights = load_file(path)
    except (SafetensorError, ValueError, OSError) as error:
        raise CorruptCheckpointError(f"{path}: not a readable safetensors file ({error}).") from None
    expected = (header.get("__metadata__") or {}).get(DIGEST_METADATA_KEY)
    if expected is not None and weights_digest(weights) != expected:
        raise CorruptCheckpointError(
            f"{path}: corrupt: its tensors do not match the SHA-256 digest stored when it was written."
        )
    return weights


# -------------------------------------------------------------------------------------- PyTorch pickles
def read_torch_bin(path):
    """{name: numpy array} of a PyTorch `pytorch_model.bin` (a state dict of tensors), read with
    `torch.load(weights_only=True)`, which runs no code from the file.

    Raises:
        CorruptCheckpointError: naming the file, when it is truncated, corrupt, or holds more than tensors.
        ImportError: torch is not installed.
    """
    try:
        import torch
    except ImportError:
        raise ImportError(f"{path} is a PyTorch pickle; reading it needs torch (`pip install torch`).") from None
    size = format_size(os.path.getsize(path))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, OSError, EOFError... on bad bytes
        if "Unsupported global" in str(error):
            raise CorruptCheckpointError(
                f"{path}: holds Python objects besides tensors, which are not loaded (they could run code); "
                "save the state dict alone, or as model.safetensors."
            ) from None
        raise CorruptCheckpointError(
            f"{path}: truncated or corrupt PyTorch checkpoint (file has {size}; torch.load: "
            f"{type(error).__name__})."
        ) from None
    if not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()):
        raise CorruptCheckpointError(f"{path}: not a PyTorch state dict (expected a dict of tensors).")
    return {k: v.float().numpy() if v.is_floating_point() else v.numpy() for k, v in state.items()}


# ---------------------------------------------------------------------------------- Keras .weights.h5
def load_keras_weights(model, path, **kwargs):
    """`model.load_weights(path, **kwargs)` for a Keras `.weights.h5` file, with a truncated or corrupt
    file reported as `CorruptCheckpointError` naming it (h5py's own errors name no file).

    Examples:

    >>> import os, tempfile
    >>> import keras
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.weights.h5")
    >>> model.save_weights(path)
    >>> load_keras_weights(model, path)
    >>> _ = os.truncate(path, os.path.getsize(path) // 2)
    >>> try:
    ...     load_keras_weights(model, path)
    ... except CorruptCheckpointError as error:
    ...     print(str(error).replace(path, "ckpt.weights.h5")[:56])
    ckpt.weights.h5: truncated or not a Keras weights file (
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No weights file at {path}")
    size = format_size(os.path.getsize(path))
    try:
        model.load_weights(path, **kwargs)
    except (OSError, RuntimeError) as error:  # h5py: OSError opening the file, RuntimeError reading inside it
        reason = str(error).split("\n")[0]
        raise CorruptCheckpointError(
            f"{path}: truncated or not a Keras weights file (file has {size}; h5py: {reason})."
        ) from None
