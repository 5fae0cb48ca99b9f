"""The package's Keras classes known to Keras before their modules are imported, so that a `.keras` file loads
after a bare `import keras_bert_impl` (which imports none of them: its exports load on first use).

Keras finds the class of a saved object by its registered name, "keras_bert_impl>BertClassifier", in its
global registry (`keras.saving.get_custom_objects()`), which a class enters when its module runs
`keras.saving.register_keras_serializable`; it imports a module itself only for its own packages (keras,
keras_hub, ...). `register_stand_ins(classes)` enters a light stand-in under each name: its `from_config`
imports the class's module (whose import registers the class itself, replacing the stand-in) and returns the
class's `from_config`. `register_when_keras_is_imported(classes)` does so at once when Keras is imported, else
right after Keras' own import (an import hook on the module `keras`, removed once it ran), whichever order a
program imports the two in. Nothing here imports Keras before the program does.
"""

import importlib
import importlib.abc
import sys

PACKAGE = "keras_bert_impl"


def _stand_in(name, module):
    """A class registered as "keras_bert_impl>`name`" that loads the class `name` of `module` from a config."""

    def from_config(cls, config, **kwargs):
        return getattr(importlib.import_module(module), name).from_config(config, **kwargs)

    def get_config(self):  # Keras registers classes that have one; a stand-in is never instantiated
        raise TypeError(f"{type(self).__name__} stands in for {module}.{name}; it has no instances.")

    return type(f"{name}StandIn", (), {
        "__doc__": f"Loads {module}.{name} from a saved config (its module imported then).",
        "__module__": __name__, "from_config": classmethod(from_config), "get_config": get_config})


def register_stand_ins(classes):
    """Enters a stand-in into Keras' registry for each class of `classes` ({name: its module}) that Keras does not
    know yet (Keras must be imported).

    Examples:

    >>> import keras
    >>> register_stand_ins({"BertClassifier": "keras_bert_impl.models.classifier"})
    >>> from keras_bert_impl.models.classifier import BertClassifier  # the class replaces its stand-in
    >>> keras.saving.get_registered_object("keras_bert_impl>BertClassifier") is BertClassifier
    True
    """
    import keras

    for name, module in classes.items():
        if keras.saving.get_registered_object(f"{PACKAGE}>{name}") is None:
            keras.saving.register_keras_serializable(package=PACKAGE, name=name)(_stand_in(name, module))


class _AfterKerasImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook of the module `keras`: the other finders find it, its own loader runs it, then
    `register_stand_ins(classes)` runs, and the hook leaves `sys.meta_path` (the module keeps its own loader)."""

    def __init__(self, classes):
        self.classes = classes
        self._loader = None
        self._finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras" or self._finding:
            return None
        self._finding = True  # the other finders may ask the meta path again: not this hook then
        try:
            spec = next((found for finder in sys.meta_path if finder is not self and hasattr(finder, "find_spec")
                         and (found := finder.find_spec(fullname, path, target)) is not None), None)
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return None
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self._loader
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self._loader.exec_module(module)
        register_stand_ins(self.classes)


def register_when_keras_is_imported(classes):
    """`register_stand_ins(classes)` now when Keras is imported, else right after Keras' own import.

    Examples:

    >>> import sys
    >>> register_when_keras_is_imported({})  # Keras is imported here (the doctests use it): registers now
    >>> any(isinstance(finder, _AfterKerasImport) for finder in sys.meta_path)
    False
    """
    if "keras" in sys.modules:
        register_stand_ins(classes)
    elif not any(isinstance(finder, _AfterKerasImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKerasImport(classes))
