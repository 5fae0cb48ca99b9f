"""`tf.train.Example` records without TensorFlow: encoded and decoded by hand (`utils/protobuf_wire.py`), in
TFRecord files read and written in pure Python (`utils/record_files.py`).

An Example of int64 and float lists, as the pretraining files hold (`data/pretraining_records.py`):

    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }           # entries sorted by name (deterministic)
    Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    Int64List { repeated int64 value = 1 [packed = true]; }  # FloatList: repeated float, packed

`encode_example` gives the bytes of `tf.train.Example.SerializeToString(deterministic=True)` for the same
features, and `decode_example` reads any Example of int64, float and bytes lists (packed or not), TensorFlow's
or ours.
"""

import numpy as np

from keras_bert_impl.utils import protobuf_wire as wire


def _feature(values):
    """The encoded `Feature` of a 1-D array: a float list for float dtypes, else an int64 list."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "f":
        values = values.astype(np.float32)
        payload = wire.length_delimited(1, wire.packed_floats(values.tolist())) if len(values) else b""
        return wire.length_delimited(2, payload)
    payload = wire.length_delimited(1, wire.packed_varints(values.tolist())) if len(values) else b""
    return wire.length_delimited(3, payload)


def encode_example(features):
    """The serialized `tf.train.Example` of `features` (name -> 1-D int or float array).

    Examples:

    >>> encode_example({"ids": [1, 2]}).hex()
    '0a0f0a0d0a0369647312061a040a020102'
    """
    entries = b"".join(
        wire.length_delimited(1, wire.length_delimited(1, name.encode("utf-8")) + wire.length_delimited(2, _feature(v)))
        for name, v in sorted(features.items()))
    return wire.length_delimited(1, entries)


def _decode_feature(data):
    for kind, wire_type, value in wire.fields(data):
        if kind == 3:  # Int64List
            values = []
            for _, list_wire_type, item in wire.fields(value):
                if list_wire_type == wire.LENGTH_DELIMITED:
                    values.extend(wire.unpack_varints(item))
                else:
                    values.append(wire.signed64(item))
            return np.array(values, np.int64)
        if kind == 2:  # FloatList
            values = []
            for _, list_wire_type, item in wire.fields(value):
                values.append(np.frombuffer(item, "<f4"))
            return np.concatenate(values).astype(np.float32) if values else np.zeros([0], np.float32)
        if kind == 1:  # BytesList
            return [item for _, _, item in wire.fields(value)]
    return np.zeros([0], np.int64)  # a Feature with no list


def decode_example(data):
    """The features of a serialized `tf.train.Example`: name -> int64 or float32 array (a bytes list: a list).

    Raises:
        ValueError: `data` is not an Example.

    Examples:

    >>> decode_example(encode_example({"ids": [1, -2], "weights": [0.5]}))
    {'ids': array([ 1, -2]), 'weights': array([0.5], dtype=float32)}
    """
    features = {}
    for number, _, value in wire.fields(data):
        if number != 1:
            continue
        for entry_number, _, entry in wire.fields(value):
            if entry_number != 1:
                continue
            name, feature = "", b""
            for part, _, part_value in wire.fields(entry):
                if part == 1:
                    name = part_value.decode("utf-8")
                elif part == 2:
                    feature = part_value
            features[name] = _decode_feature(feature)
    return features
