"""XLA compiles counted by JAX's monitoring events (tests of what compiles when)."""

import jax

_EVENTS: list = []
jax.monitoring.register_event_duration_secs_listener(lambda name, *a, **k: _EVENTS.append(name))


def count_compiles(fn) -> int:
    """XLA compiles while ``fn()`` runs."""
    start = len(_EVENTS)
    fn()
    return _EVENTS[start:].count("/jax/core/compile/backend_compile_duration")
