"""LangChain and LangGraph faces for mnemon: a retriever, a chain memory, agent tools and a LangGraph store.

```python
from mnemon_core import Memory
from langchain_mnemon import MnemonRetriever, MnemonMemory, MnemonStore, create_mnemon_tools
```
Install with `pip install "mnemon[langchain]"`. Each class is a thin face over `Memory` / `AsyncMemory`.
Names load on first use, so the retriever works without langgraph installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "MnemonMemory": "memory",
    "MnemonRetriever": "retrievers",
    "MnemonStore": "store",
    "create_mnemon_tools": "tools",
    "format_documents": "retrievers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_mnemon' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from .memory import MnemonMemory
    from .retrievers import MnemonRetriever, format_documents
    from .store import MnemonStore
    from .tools import create_mnemon_tools
