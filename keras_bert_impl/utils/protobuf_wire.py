"""Protocol Buffers' wire format, by hand: the few encodings that `tf.train.Example` and TensorBoard's
`Event` need (varints, fixed 32/64-bit numbers, length-delimited fields, packed repeated fields), and a
decoder that splits a message into its fields.

Why by hand: the messages are small and fixed (`data/example_records.py`, `training/tensorboard_events.py`),
and their generated classes come with TensorFlow (`tf.train.Example`, `tensorflow.core.util.event_pb2`),
which the JAX and torch installs do not have. The encoders write fields in field-number order with packed
repeated scalars, as protobuf's serializers do, so the bytes equal `SerializeToString(deterministic=True)`
(`tests/test_record_files.py` compares them).

Wire types: 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit.
"""

import struct

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


def varint(value):
    """The varint bytes of an integer; a negative int64 is its 64-bit two's complement (10 bytes).

    Examples:

    >>> varint(1), varint(300), len(varint(-1))
    (b'\\x01', b'\\xac\\x02', 10)
    """
    value = int(value)
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(field_number, wire_type):
    """A field's key: its number and wire type, as a varint."""
    return varint((field_number << 3) | wire_type)


def length_delimited(field_number, payload):
    """A length-delimited field (bytes, a string's UTF-8, a sub-message, a packed list).

    Examples:

    >>> length_delimited(1, b"ab")
    b'\\n\\x02ab'
    """
    return key(field_number, LENGTH_DELIMITED) + varint(len(payload)) + payload


def varint_field(field_number, value):
    """A varint field (int32, int64, uint64, bool, enum)."""
    return key(field_number, VARINT) + varint(value)


def double_field(field_number, value):
    """A `double` field."""
    return key(field_number, FIXED64) + struct.pack("<d", value)


def float_field(field_number, value):
    """A `float` field."""
    return key(field_number, FIXED32) + struct.pack("<f", value)


def packed_varints(values):
    """The payload of a packed repeated int64 field (without its key and length)."""
    return b"".join(varint(v) for v in values)


def packed_floats(values):
    """The payload of a packed repeated float field (without its key and length)."""
    return struct.pack(f"<{len(values)}f", *values)


def read_varint(data, position):
    """`(value, next position)` of the varint at `position` of `data` (unsigned).

    Examples:

    >>> read_varint(b"\\xac\\x02", 0)
    (300, 2)
    """
    result = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def signed64(value):
    """An unsigned 64-bit varint's value as the int64 it encodes."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(data):
    """The fields of an encoded message, in order: `(field number, wire type, value)`; a varint's value is
    its unsigned int, a fixed field's its raw bytes, a length-delimited field's its bytes.

    Raises:
        ValueError: `data` is not a well-formed message (truncated, or an unknown wire type).

    Examples:

    >>> list(fields(varint_field(2, 7) + length_delimited(1, b"ab")))
    [(2, 0, 7), (1, 2, b'ab')]
    """
    position, end = 0, len(data)
    while position < end:
        field_key, position = read_varint(data, position)
        field_number, wire_type = field_key >> 3, field_key & 7
        if wire_type == VARINT:
            value, position = read_varint(data, position)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            value, position = data[position:position + size], position + size
        elif wire_type == LENGTH_DELIMITED:
            size, position = read_varint(data, position)
            value, position = data[position:position + size], position + size
        else:
            raise ValueError(f"wire type {wire_type} of field {field_number} is not supported")
        if position > end:
            raise ValueError(f"field {field_number} runs past the end of the message")
        yield field_number, wire_type, value


def unpack_varints(payload):
    """The int64 values of a packed repeated varint field's payload.

    Examples:

    >>> unpack_varints(packed_varints([1, -2, 300]))
    [1, -2, 300]
    """
    values, position = [], 0
    while position < len(payload):
        value, position = read_varint(payload, position)
        values.append(signed64(value))
    return values
