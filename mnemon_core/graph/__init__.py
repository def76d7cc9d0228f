"""The graph read model both pipelines share, between them and `store/`: the memo of what recall and remember
read of the graph (`memo.py`), the index file that memo starts from (`index.py`), and the one policy that writes
that file and cuts the store's change log (`fold.py`). A backend offers only data calls (`store.base.GraphLog`)."""

from __future__ import annotations

from .fold import fold_index, index_file, index_state, status
from .index import EDGE_TYPES, SUB_TYPES
from .memo import Edges, GraphView, graph_view, tally

__all__ = ["EDGE_TYPES", "SUB_TYPES", "Edges", "GraphView", "fold_index", "graph_view", "index_file",
           "index_state", "status", "tally"]
