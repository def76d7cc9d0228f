"""LangChain and LangGraph faces for mnemon: a retriever, a chain memory, agent tools and a LangGraph store.

```python
from mnemon_core import Memory
from langchain_mnemon import MnemonRetriever, MnemonMemory, MnemonStore, create_mnemon_tools
```
Install with `pip install "mnemon-core[langchain]"`. Each class is a thin face over `Memory` / `AsyncMemory`.
Names load on first use, so the retriever works without langgraph installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemon_core.lazy import lazy_exports

_EXPORTS = {
    "MnemonMemory": "memory",
    "MnemonRetriever": "retrievers",
    "MnemonStore": "store",
    "create_mnemon_tools": "tools",
    "format_documents": "retrievers",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from .memory import MnemonMemory
    from .retrievers import MnemonRetriever, format_documents
    from .store import MnemonStore
    from .tools import create_mnemon_tools
