"""Lowering of symbols to JAX and MXNet's Executor."""

from .bind import bind, simple_bind
from .executor import Executor, compiled_for
from .lower import GraphFn

__all__ = ["Executor", "GraphFn", "bind", "simple_bind", "compiled_for"]
