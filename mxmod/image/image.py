"""``mxnet.image.image``: the image functions, augmenters and ``ImageIter`` (one module in
MXNet; ``mx.image.image.imread`` and ``mx.img.image.imread`` reach them)."""

from ._augmenters import *  # noqa: F403
from ._image_iter import ImageIter  # noqa: F401
from ._ops import *  # noqa: F403
from ._rotate import imrotate, random_rotate  # noqa: F401
