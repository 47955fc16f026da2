from .core import greet, farewell

__all__ = ["greet", "farewell"]
