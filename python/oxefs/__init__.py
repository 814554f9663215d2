"""Read the batches an oxefs mount serves.

oxefs is a FUSE daemon that builds mixed robot-learning batches on read
(batches/NNNNNN.npy with a .json of metadata). This package starts the
daemon (mount), reads its batches as numpy arrays or torch tensors
(Batches, a map-style dataset; Loader, a read-ahead iterator that needs no
DataLoader workers), and reads info.json and stats.json.
"""

from ._batches import Batches, Loader, rank_dir, read_info, read_stats
from ._dist import rank_world
from ._mount import Mount, OxefsError, find_binary, mount, node_ranks

__all__ = ["Batches", "Loader", "Mount", "OxefsError", "find_binary", "mount", "node_ranks", "rank_dir", "rank_world", "read_info", "read_stats"]
__version__ = "0.1.0"
