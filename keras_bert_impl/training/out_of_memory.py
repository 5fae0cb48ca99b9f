"""Out-of-memory errors during training, said in one line with their likely cause.

A run that does not fit in memory fails with the backend's own error (TensorFlow's `ResourceExhaustedError`,
XLA's `RESOURCE_EXHAUSTED`, torch's `OutOfMemoryError`, Python's `MemoryError`), a long traceback that
names neither the model's size nor the batch. `explain_out_of_memory` turns such an error, raised inside its
`with` block (around `fit`), into a `UserInputError` naming the parameter count, the batch size and the
sequence length, and what to lower. Errors the process cannot catch (an allocator's abort, the kernel's OOM
killer) end it as before.
"""

import contextlib

from keras_bert_impl.utils.errors import UserInputError

# Words of the backends' out-of-memory errors (their messages or class names).
_OUT_OF_MEMORY_WORDS = ("out of memory", "resource_exhausted", "resourceexhausted", "outofmemory",
                        "can't allocate memory", "failed to allocate", "bad_alloc")


def is_out_of_memory(error):
    """Whether `error` is a backend's or Python's out-of-memory error.

    Examples:

    >>> is_out_of_memory(MemoryError()), is_out_of_memory(RuntimeError("RESOURCE_EXHAUSTED: Out of memory"))
    (True, True)
    >>> is_out_of_memory(ValueError("shapes do not match"))
    False
    """
    if isinstance(error, MemoryError):
        return True
    text = f"{type(error).__name__} {str(error)[:2000]}".lower()
    return any(word in text for word in _OUT_OF_MEMORY_WORDS)


@contextlib.contextmanager
def explain_out_of_memory(model, batch_size, sequence_length, batch_flag="--train_batch_size",
                          length_flag="--max_seq_length"):
    """Re-raises an out-of-memory error of the block as a one-line `UserInputError` naming the likely cause.

    Args:
        model: the model being trained (its parameter count is named).
        batch_size, sequence_length: the batch's size and the longest sequence of a batch.
        batch_flag, length_flag: the flags that set them.

    Examples:

    >>> import keras
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> with explain_out_of_memory(model, 32, 128):
    ...     raise MemoryError()
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: out of memory training a model of 10 parameters on batches of 32 x 128 tokens (MemoryError): lower --train_batch_size or --max_seq_length, or train a smaller model
    """
    try:
        yield
    except Exception as error:  # noqa: BLE001  (only out-of-memory errors are replaced; the others go on)
        if not is_out_of_memory(error):
            raise
        first_line = next((line for line in str(error).splitlines() if line.strip()), "")[:200]
        cause = type(error).__name__ + (f": {first_line}" if first_line else "")
        raise UserInputError(
            f"out of memory training a model of {model.count_params():,} parameters on batches of {batch_size} x "
            f"{sequence_length} tokens ({cause}): lower {batch_flag} or {length_flag}, or train a smaller model"
        ) from error
