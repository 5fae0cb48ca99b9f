"""BertTask: what every task model on a BertBackbone shares, its serialization with the backbone."""

import keras


class BertTask(keras.Model):
    """Base class of the task models (pretrainer, classifier, span QA, ...): a functional model built on a
    `BertBackbone`, whose config is the serialized backbone plus the task's own arguments.

    A subclass builds its layers and functional graph in `__init__`, calls
    `super().__init__(inputs=..., outputs=...)`, sets `self.backbone`, and lists its other constructor
    arguments in `task_config()`.
    """

    def task_config(self):
        """The subclass's constructor arguments other than the backbone."""
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
