"""Image decoding, augmentation and iteration, as ``mxnet.image`` (MXNet 1.9.1).

OpenCV (``opencv-python-headless``) decodes and resizes, as it does inside MXNet.
"""

from . import _augmenters, _ops, detection, image
from . import detection as det
from . import image as img
from ._augmenters import *  # noqa: F403 -- the augmenters, as _augmenters.__all__
from ._image_iter import ImageIter
from ._ops import *  # noqa: F403 -- the image functions, as _ops.__all__
from ._rotate import imrotate, random_rotate
from .detection import *  # noqa: F403 -- ImageDetIter and the detection augmenters

__all__ = (
    _ops.__all__
    + _augmenters.__all__
    + ["ImageIter", "imrotate", "random_rotate"]
    + detection.__all__
    + ["image", "img", "detection", "det"]
)
