"""Lowering of symbols to JAX and MXNet's Executor."""

from ..symbol.symbol import EXECUTOR_HOOKS
from .bind import bind, simple_bind
from .executor import Executor, compiled_for, forget_compiled
from .lower import GraphFn

EXECUTOR_HOOKS.update(bind=bind, simple_bind=simple_bind)  # Symbol.bind / simple_bind

__all__ = ["Executor", "GraphFn", "bind", "simple_bind", "compiled_for", "forget_compiled"]
