"""The constructor arguments a layer keeps: set as its attributes and returned by its `get_config`, both from
one list (`keep_arguments` in `__init__`, `arguments_config` in `get_config`)."""


def keep_arguments(layer, **arguments):
    """Sets each of `arguments` as an attribute of `layer`, and remembers their names (in this order) for
    `arguments_config`.

    Examples:

    >>> import keras
    >>> class Scaled(keras.layers.Layer):
    ...     def __init__(self, factor=2.0, **kwargs):
    ...         super().__init__(**kwargs)
    ...         keep_arguments(self, factor=factor)
    ...     def get_config(self):
    ...         return arguments_config(self, super().get_config())
    >>> layer = Scaled(3.0, name="scaled")
    >>> layer.factor, Scaled.from_config(layer.get_config()).factor
    (3.0, 3.0)
    """
    for name, value in arguments.items():
        setattr(layer, name, value)
    layer.kept_argument_names = tuple(arguments)


def arguments_config(layer, config):
    """`config` (the base class's `get_config()`) updated with the arguments `keep_arguments` kept, as the
    layer holds them now."""
    config.update({name: getattr(layer, name) for name in layer.kept_argument_names})
    return config
