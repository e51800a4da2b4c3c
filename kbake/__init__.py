"""kbake: bake the knowledge in private documents into a language model's weights."""

__version__ = "0.1.0"
