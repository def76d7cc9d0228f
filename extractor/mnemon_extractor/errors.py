"""Errors of the extractor and the link judge. All are `MnemonError`s, so the CLI shows them as one line.

    MnemonError
    └── ExtractorError
        ├── UnknownFormatError    an export file none of the readers understands
        ├── LLMError              the model server could not be used (auth, model name, refused format, network)
        └── ExtractionError       nothing could be extracted (every chunk failed, or nothing worth keeping)
"""

from __future__ import annotations

from typing import Any

from mnemon_core.errors import MnemonError


class ExtractorError(MnemonError):
    """Root of the extractor's errors."""


class UnknownFormatError(ExtractorError, ValueError):
    def __init__(self, path: str, detail: str, formats: str) -> None:
        super().__init__(f"{path}: unrecognised export format ({detail}); we read: {formats}")
        self.path = path


class LLMError(ExtractorError):
    """The model server refused the request for a reason a retry will not fix."""


class ExtractionError(ExtractorError):
    """The run produced no draft; `report` says what happened to each chunk."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report
