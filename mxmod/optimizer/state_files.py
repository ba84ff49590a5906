"""The optimizer-state file formats, for the packages that write or read them (the Module's
``module/opt_states.py``, the KVStore): mxmod's pickle-free format (``_codec``), MXNet's
pickles behind ``allow_pickle`` (``_mxnet_pickle``) and the checks of a decoded table."""

from ._codec import Counts, HostNDArray, StatesFile, dumps, is_v1_module_payload, loads_file
from ._mxnet_pickle import REFUSED_HELP, is_pickle, restricted_loads
from .updater import check_states_dict, held_counts

__all__ = ["Counts", "HostNDArray", "StatesFile", "dumps", "loads_file", "is_v1_module_payload",
           "REFUSED_HELP", "is_pickle", "restricted_loads", "check_states_dict",
           "held_counts"]  # fmt: skip
