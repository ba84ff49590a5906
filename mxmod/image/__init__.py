"""Image decoding, augmentation and iteration, as ``mxnet.image`` (MXNet 1.9.1).

OpenCV (``opencv-python-headless``) decodes and resizes, as it does inside MXNet.
"""

from . import _augmenters, _ops
from ._augmenters import *  # noqa: F403 -- the augmenters, as _augmenters.__all__
from ._image_iter import ImageIter
from ._ops import *  # noqa: F403 -- the image functions, as _ops.__all__
from ._rotate import imrotate, random_rotate

__all__ = _ops.__all__ + _augmenters.__all__ + ["ImageIter", "imrotate", "random_rotate"]
