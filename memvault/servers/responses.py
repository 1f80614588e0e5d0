"""The JSON error of a failed call, one mapping of memvault's errors to HTTP statuses for the
read routes (memvault.servers.http) and the hub's (memvault.servers.hub)."""

from starlette.responses import JSONResponse

from memvault.errors import AmbiguousIdError, IndexMismatchError, LedgerBusy, MemvaultError, NotFoundError, UsageError


def _error(status: int, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc), "type": type(exc).__name__}, status_code=status)


def error_response(exc: MemvaultError) -> JSONResponse:
    """The JSON error for a failed call: 404, 400 misuse, 409 ambiguous, 503 busy or stale, else 500."""
    status = (404 if isinstance(exc, NotFoundError) else 400 if isinstance(exc, UsageError)
              else 409 if isinstance(exc, AmbiguousIdError) else 503 if isinstance(exc, (IndexMismatchError, LedgerBusy))
              else 500)
    return _error(status, exc)
