"""The six feature-based rows of the paper's Table 7 (CoNLL-2003 NER on a frozen BERT), as named presets.

A preset names which hidden states feed the task and how they combine. Indices are into the backbone's
`hidden_states` (`output_hidden_states=True`): 0 is the embeddings output, 1..L the L encoder layers,
negative indices count from the last layer (-1). "concat" concatenates the states on the feature axis
([batch, seq, n * H]); "scalar_mix" is the learned softmax-weighted sum `ScalarMix` ([batch, seq, H]).

| preset             | Table 7 row                    | hidden states      | combine    |
|--------------------|--------------------------------|--------------------|------------|
| "embeddings"       | Embeddings                     | 0                  | concat     |
| "second_to_last"   | Second-to-Last Hidden          | -2                 | concat     |
| "last"             | Last Hidden                    | -1                 | concat     |
| "sum_last_four"    | Weighted Sum Last Four Hidden  | -4, -3, -2, -1     | scalar_mix |
| "concat_last_four" | Concat Last Four Hidden        | -1, -2, -3, -4     | concat     |
| "sum_all"          | Weighted Sum All 12 Layers     | 1..L (encoder)     | scalar_mix |

"sum_all" mixes the L encoder layers (12 for BERT-Base, 6 for a 6-layer MiniLM), not the embeddings, as
the paper's "All 12 Layers" of BERT-Base counts them.
"""

FEATURE_COMBINES = ("concat", "scalar_mix")

# Preset -> (hidden-state indices, combine); "sum_all"'s indices depend on the depth (feature_mode_layers).
FEATURE_MODES = {
    "embeddings": ((0,), "concat"),
    "second_to_last": ((-2,), "concat"),
    "last": ((-1,), "concat"),
    "sum_last_four": ((-4, -3, -2, -1), "scalar_mix"),
    "concat_last_four": ((-1, -2, -3, -4), "concat"),
    "sum_all": (None, "scalar_mix"),
}


def feature_mode_layers(feature_mode, num_hidden_layers):
    """`(hidden-state indices, combine)` of a Table 7 preset for a backbone of `num_hidden_layers` layers.

    Args:
        feature_mode: one of `FEATURE_MODES`.
        num_hidden_layers: the backbone's L.

    Raises:
        ValueError: an unknown preset, naming the allowed ones.

    Examples:

    >>> feature_mode_layers("concat_last_four", 12)
    ((-1, -2, -3, -4), 'concat')
    >>> feature_mode_layers("sum_all", 6)
    ((1, 2, 3, 4, 5, 6), 'scalar_mix')
    """
    if feature_mode not in FEATURE_MODES:
        raise ValueError(f"feature_mode must be one of {', '.join(FEATURE_MODES)}; got {feature_mode!r}.")
    layers, combine = FEATURE_MODES[feature_mode]
    if layers is None:
        layers = tuple(range(1, int(num_hidden_layers) + 1))
    return tuple(layers), combine


def check_feature_layers(feature_layers, feature_combine, num_hidden_layers, name="feature_layers"):
    """Checks hidden-state indices (within -(L+1)..L) and the combine; returns the indices as a tuple of int.

    Raises:
        ValueError: an index out of range or an unknown combine, in one line naming `name` or
            `feature_combine`.

    Examples:

    >>> check_feature_layers([-1, 0], "concat", 2)
    (-1, 0)
    """
    if feature_combine not in FEATURE_COMBINES:
        raise ValueError(f"feature_combine must be one of {', '.join(FEATURE_COMBINES)}; got {feature_combine!r}.")
    feature_layers = tuple(int(i) for i in feature_layers)
    if not feature_layers:
        raise ValueError(f"{name} must name at least one hidden state.")
    num_states = int(num_hidden_layers) + 1
    for index in feature_layers:
        if not -num_states <= index < num_states:
            raise ValueError(f"feature layer {index} out of range: the backbone has {num_states} hidden states (the "
                             f"embeddings and {num_states - 1} layers); pass {name} within "
                             f"-{num_states}..{num_states - 1}.")
    return feature_layers
