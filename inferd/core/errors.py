"""The typed errors of the runtime. They carry no status codes: `inferd.protocols.status` maps them."""

from __future__ import annotations


class InferdError(Exception):
    """Base of every error inferd reports to a client; ``message`` is safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(InferdError):
    """The request is malformed or does not fit the model (client error)."""


class PayloadTooLarge(InvalidInput):
    """The request body is larger than the configured limit."""


class HeadersTooLarge(InvalidInput):
    """The request line and headers are larger than the configured limit."""


class ClientTimeout(InvalidInput):
    """The client did not send its request's headers, or its body, in time (a slow or stalled client)."""


class NotFound(InferdError):
    """What the request names does not exist (a model, a deployment, a service...)."""


class Conflict(InferdError):
    """The request contradicts what exists: a name taken, a record still in use, a state that does
    not allow it (a running service deleted)."""


class PreconditionFailed(Conflict):
    """The request was made on a condition about what exists (HTTP ``If-Match``/``If-None-Match``)
    that no longer holds: someone changed the record since the client read it."""


class BudgetExceeded(Conflict):
    """The request would take a server past one of its budgets (the processes the control process
    runs): nothing was started. ``details`` name the budget, what is in use, what was asked and the
    setting, for the answer's body."""

    def __init__(self, budget: str, asked: int, in_use: int, limit: int, setting: str) -> None:
        super().__init__(
            f"the {budget} budget would be exceeded: this needs {asked}, {in_use} of {limit} are in "
            f"use ({setting}={limit}); stop or scale down something else, or raise {setting}"
        )
        self.details: dict[str, object] = {
            "budget": budget,
            "asked": asked,
            "in_use": in_use,
            "limit": limit,
            "setting": setting,
        }


class ModelNotFound(NotFound):
    """No model (or version) of that name is registered."""


class ModelNotReady(InferdError):
    """The model exists but is loading, unloaded or failed to load."""


class ModelLoadError(InferdError):
    """Loading a model failed; the message says why."""


class StoredObjectMissing(ModelLoadError):
    """Object storage (or an http(s) server) has no object, prefix or bucket of the URI a model,
    repository or bundle is fetched from (or written to)."""


class StorageAccessDenied(ModelLoadError):
    """This server has no credentials for the URI it must fetch or write, or the store refused them:
    the server's configuration, not the caller's token, is what to fix."""


class StorageUnavailable(ModelLoadError):
    """The store did not answer (connection refused, no answer in time), answered with a 5xx, or
    broke off a transfer: this server's upstream failed, so a retry later may succeed."""


class RetryLater(InferdError):
    """The request could not be answered now but may be on a retry, after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Overloaded(RetryLater):
    """The server sheds this request; the client should retry later."""


class TooManyFailures(RetryLater):
    """This client presented too many wrong tokens lately: its next wrong ones are refused so, after a
    wait, until ``retry_after`` seconds have passed (a right token is never refused so)."""


class ModelProcessLost(RetryLater):
    """The process running the model's code died, outgrew its memory limit or hung while this
    request was in it; it is being replaced, so a retry may succeed."""


class RequestTimeout(InferdError):
    """The model did not answer within the request timeout; its answer, if it comes, is dropped."""


class Unauthenticated(InferdError):
    """The request carries no bearer token, or one the server does not know."""


class Forbidden(InferdError):
    """The request is refused for where it comes from: a foreign ``Origin`` on a route that changes
    the server's state, or a ``Host`` name a loopback server does not answer to (DNS rebinding)."""


class BadGateway(InferdError):
    """A gateway's upstream could not be reached or broke off its answer."""


class InferenceFailed(InferdError):
    """User model code raised; the client only sees a generic message."""

    def __init__(self, model: str) -> None:
        super().__init__(f"model '{model}' failed to run the request; see the server log")


class ListenError(InferdError):
    """A server port could not be bound (in use, or not allowed)."""


class TargetError(InferdError):
    """A serve target could not be resolved to models (unknown file, module or dialect)."""


class MissingExtra(TargetError):
    """What was asked for needs an optional part of inferd that is not installed: ``extra``, which
    ``pip install 'inferd[EXTRA]'`` adds (the message says that line). Whatever needs it (ONNX,
    TensorFlow, s3:// or gs:// storage, the ray engine), the CLI ends with the same code, 2: the
    user fixes it in their environment, as a target given the wrong way."""

    def __init__(self, message: str, extra: str = "") -> None:
        super().__init__(message)  # ``extra`` may come later: a storage error builds its message first
        self.extra = extra

    @staticmethod
    def install(extra: str) -> str:
        """The command that adds ``extra``, as messages print it."""
        return f"pip install 'inferd[{extra}]'"


class Unavailable(RetryLater):
    """Something the model relies on (a remote node of a graph) cannot be reached; retry later."""


class EngineError(InferdError):
    """The chosen engine cannot run the server (a missing optional dependency, an unreachable
    cluster, a deployment its platform refused)."""
