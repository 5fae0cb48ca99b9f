"""LoRA adapter files in keras-hub's layout (`Backbone.save_lora_weights` / `load_lora_weights`).

An HDF5 file whose name ends in `.lora.h5`:

    lora/vars/rank                       the adapters' rank (a scalar)
    lora/{i}/vars/lora_kernel_a          [*kernel.shape[:-1], rank] of the i-th layer
    lora/{i}/vars/lora_kernel_b          [rank, kernel.shape[-1]]

where i is the layer's index among the backbone's layers that hold weights, in Keras' tracking order (the
datasets sit under `vars` groups, as Keras' `H5IOStore` writes and reads them). keras-hub's
`Backbone.load_lora_weights` reads such a file, and `read_lora_file` reads keras-hub's.
"""

import h5py
import numpy as np

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_path

SUFFIX = ".lora.h5"


def _check_name(path):
    if not str(path).endswith(SUFFIX):
        raise UserInputError(f"{path}: a LoRA weights file's name ends in {SUFFIX} (keras-hub's rule).")


def write_lora_file(path, rank, kernels):
    """Writes `kernels` {layer index: (lora_kernel_a, lora_kernel_b)} of adapters of `rank` to `path`, atomically.

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "adapters.lora.h5")
    >>> write_lora_file(path, 2, {7: (np.ones((4, 2)), np.zeros((2, 3)))})
    >>> rank, kernels = read_lora_file(path)
    >>> rank, sorted(kernels), kernels[7][0].shape
    (2, [7], (4, 2))
    """
    _check_name(path)
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f["lora/vars/rank"] = int(rank)
            for index, (kernel_a, kernel_b) in kernels.items():
                f[f"lora/{index}/vars/lora_kernel_a"] = np.asarray(kernel_a)
                f[f"lora/{index}/vars/lora_kernel_b"] = np.asarray(kernel_b)


def read_lora_file(path):
    """(rank, {layer index: (lora_kernel_a, lora_kernel_b)}) of a `.lora.h5` file; `UserInputError` naming the
    file when it is missing or not such a file."""
    _check_name(path)
    try:
        with h5py.File(path, "r") as f:
            rank = int(f["lora/vars/rank"][()])
            kernels = {int(name): (np.asarray(f[f"lora/{name}/vars/lora_kernel_a"]),
                                   np.asarray(f[f"lora/{name}/vars/lora_kernel_b"]))
                       for name in f["lora"] if name != "vars"}
    except FileNotFoundError:
        raise UserInputError(f"{path}: no such LoRA weights file.") from None
    except (OSError, KeyError) as error:
        raise UserInputError(f"{path}: not a LoRA weights file in keras-hub's layout ({error}).") from None
    return rank, kernels
