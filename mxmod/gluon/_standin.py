"""Gluon stand-ins that MXNet programs can subclass.

A script that defines ``class Net(mx.gluon.HybridBlock)`` beside its Module code must
import even when only the Module path runs. Class names of ``mx.gluon`` (capitalised:
``Block``, ``nn.Dense``, ``loss.L2Loss``, ``data.Dataset``...) are therefore real
classes: a class statement deriving from one (with its methods and decorators) runs,
and creating an instance of it, or of any subclass, raises ``NotImplementedError``
naming the class. Other names (functions such as ``utils.split_and_load``) are
:class:`~mxmod._placeholder.Unavailable`, whose first use raises.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._placeholder import Unavailable, _StubFinder

# MXNet 1.9.1's gluon submodules (relative to mx.gluon): imported as stand-in modules.
SUBMODULES = frozenset(
    """
    block contrib contrib.cnn contrib.data contrib.data.sampler contrib.data.text
    contrib.estimator contrib.nn contrib.rnn data data.dataloader data.dataset
    data.sampler data.vision data.vision.datasets data.vision.transforms loss model_zoo
    model_zoo.model_store model_zoo.vision nn nn.activations nn.basic_layers
    nn.conv_layers parameter rnn rnn.rnn_cell rnn.rnn_layer trainer utils
    """.split()
)

_CLASSES: dict[str, type] = {}


class _StandInMeta(type):
    """Metaclass of the stand-ins: defining subclasses works, instantiating raises."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        base = next(k for k in cls.__mro__ if k.__dict__.get("_gluon_name"))
        what = f"{base._gluon_name}()"
        if base is not cls:
            what = f"{cls.__name__}(), a {base._gluon_name} subclass,"
        raise NotImplementedError(f"{what} is not available in mxmod: {base._gluon_advice}")


def standin_class(public: str, advice: str) -> type:
    """The one stand-in class for the gluon class ``public`` (e.g. ``'mx.gluon.HybridBlock'``).

    Classes are shared by simple name, as MXNet re-exports one class in several places
    (``mx.gluon.HybridBlock is mx.gluon.nn.HybridBlock``).
    """
    short = public.rsplit(".", 1)[-1]
    if short not in _CLASSES:
        attrs = {
            "_gluon_name": public,
            "_gluon_advice": advice,
            "__module__": "mxmod.gluon",
            "__qualname__": public[len("mx.gluon.") :],
        }
        _CLASSES[short] = _StandInMeta(short, (), attrs)
    return _CLASSES[short]


def gluon_attr(package: str, public: str, name: str, advice: str) -> Any:
    """What ``<public>.<name>`` gives: a stand-in submodule, class or Unavailable."""
    if name.startswith("_"):
        raise AttributeError(f"module {public!r} has no attribute {name!r}")
    relative = f"{package}.{name}".split(".", 2)[2]  # drop 'mxmod.gluon'
    if relative in SUBMODULES:
        return importlib.import_module(f"{package}.{name}")
    if name[:1].isupper():
        return standin_class(f"{public}.{name}", advice)
    return Unavailable(f"{public}.{name}", advice)


class GluonFinder(_StubFinder):
    """Import hook giving stand-in modules for ``mxmod.gluon.<submodule>``, whose
    attributes come from :func:`gluon_attr`."""

    def exec_module(self, module: Any) -> None:
        package = module.__name__
        public = self.public + package[len(self.package) :]

        def __getattr__(name: str) -> Any:
            return gluon_attr(package, public, name, self.advice)

        module.__getattr__ = __getattr__
        module.__doc__ = f"Stand-in for {public}: {self.advice}"
