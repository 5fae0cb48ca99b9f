"""TFRecord files without TensorFlow: the framing that `tf.io.TFRecordWriter` writes and
`tf.data.TFRecordDataset` reads, in pure Python, so that the same files serve every backend.

Each record is

    uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)

where crc32c is the Castagnoli CRC-32 and masked(c) = ((c >> 15 | c << 17) + 0xA282EAD8) mod 2**32, as
TensorFlow's `tsl/lib/io/record_writer.cc` and `crc32c.h`. The files written here equal TensorFlow's byte
for byte for the same records, and each side reads the other's (`tests/test_record_files.py`). Only
uncompressed files (TensorFlow's default, the pretraining files') are read and written here.

The CRC is computed a byte at a time from a 256-entry table, or by the `google_crc32c` or `crc32c`
package when one is installed (the same values, in C): a few MB/s in Python, enough for the pretraining
files' few KB per record.
"""

import struct

from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError

_MASK_DELTA = 0xA282EAD8


def _table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def _python_crc32c(data):
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _fast_crc32c():
    """The CRC-32C function of an installed C implementation, or None."""
    try:
        import google_crc32c

        if google_crc32c.implementation == "c":
            return google_crc32c.value
    except ImportError:
        pass
    try:
        import crc32c

        return crc32c.crc32c
    except ImportError:
        return None


_crc32c = _fast_crc32c() or _python_crc32c


def crc32c(data):
    """The CRC-32C (Castagnoli) of `data` (bytes).

    Examples:

    >>> hex(crc32c(b"123456789"))  # the check value of CRC-32C
    '0xe3069283'
    """
    return _crc32c(data)


def masked_crc32c(data):
    """TensorFlow's masked CRC-32C of `data`, as stored in a TFRecord.

    Examples:

    >>> hex(masked_crc32c(b""))
    '0xa282ead8'
    """
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def framed(data):
    """The bytes of one TFRecord holding `data`.

    Examples:

    >>> framed(b"ab")[:8], framed(b"ab")[12:14]
    (b'\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00', b'ab')
    """
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


class RecordWriter:
    """Writes TFRecords to a file (a context manager; `write(data)` appends one record).

    Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> with RecordWriter(path) as writer:
    ...     writer.write(b"first")
    ...     writer.write(b"second")
    >>> list(read_records(path))
    [b'first', b'second']
    """

    def __init__(self, path):
        self.path = path
        self._file = file_io.open_binary(path, "wb")

    def write(self, data):
        self._file.write(framed(bytes(data)))

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def read_records(path, verify=True):
    """Yields the records (bytes) of the TFRecord file at `path`, in order.

    Args:
        path: A TFRecord file (uncompressed; local, or a URL: `file_io`).
        verify: Check each record's length and data CRCs, as TensorFlow does.

    Raises:
        UserInputError: the file is not a TFRecord file, or is truncated or corrupt, naming the file and
            the record (0-based) and its byte offset.
    """
    with file_io.open_binary(path) as f:
        index = offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise _corrupt(path, index, offset, "truncated record header")
            length_bytes, length_crc = header[:8], struct.unpack("<I", header[8:])[0]
            if verify and masked_crc32c(length_bytes) != length_crc:
                raise _corrupt(path, index, offset, "not a TFRecord file, or a corrupted length")
            (length,) = struct.unpack("<Q", length_bytes)
            data, data_crc = f.read(length), f.read(4)
            if len(data) < length or len(data_crc) < 4:
                raise _corrupt(path, index, offset, f"truncated record ({length} bytes announced)")
            (data_crc,) = struct.unpack("<I", data_crc)
            if verify and masked_crc32c(data) != data_crc:
                raise _corrupt(path, index, offset, "corrupted record data (CRC mismatch)")
            yield data
            index += 1
            offset += 16 + length


def _corrupt(path, index, offset, what):
    return UserInputError(f"{path}: record {index} at byte {offset}: {what}.")
