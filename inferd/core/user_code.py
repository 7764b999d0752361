"""Telling what user code raised apart from the process being stopped or its caller cancelled.

A model's code runs when inferd imports it (a repository's scan, dialect detection), builds it and
loads it. Whatever that code raises is the model's failure, ``BaseException``s included: a
``model.py`` ending in ``sys.exit()`` (``SystemExit``), a ``GeneratorExit`` or a ``BaseException``
subclass of its own must make that model unservable, not escape into the server, where it answered
500 and broke every later load of every model. Two things are not the model's: a Ctrl-C reaching the
main thread (``KeyboardInterrupt``: Python delivers signals there only) and a cancellation of the
task awaiting the code (``asyncio.CancelledError`` while the task is being cancelled), which must go
on up or the server could not stop or time out a load.
"""

from __future__ import annotations

import asyncio
import sysconfig
import threading
import traceback
from pathlib import Path


def is_own_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised out of user code, is that code's failure (to report as the model's
    problem) rather than an interrupt or a cancellation (to raise on)."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, KeyboardInterrupt):
        return threading.current_thread() is not threading.main_thread()
    if isinstance(exc, asyncio.CancelledError):
        return not _being_cancelled()
    return True


def _being_cancelled() -> bool:
    """The running task (if any) has been asked to cancel; without ``Task.cancelling`` (Python
    3.10) every cancellation is taken as one."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop in this thread: nothing here can be cancelled
        return False
    if task is None:
        return False
    cancelling = getattr(task, "cancelling", None)
    return True if cancelling is None else bool(cancelling())


#: inferd's own files and Python's standard library (threads, asyncio): frames in them are how user
#: code was reached, not what it wrote.
_OWN = (str(Path(__file__).resolve().parent.parent) + "/", sysconfig.get_paths()["stdlib"] + "/", "<frozen ")


def user_traceback(exc: BaseException) -> str | None:
    """The frames of ``exc`` from the first one in neither inferd nor Python's standard library on, as
    ``traceback`` prints them, with the error's line; None when no frame is the user's (then the error
    is inferd's own and its whole traceback is what a report needs). The same cut as the CLI's
    ``user_errors`` makes for code raising on import, for code raising while a model loads."""
    frames = traceback.extract_tb(exc.__traceback__)
    for index, frame in enumerate(frames):
        if not frame.filename.startswith(_OWN):
            user = traceback.StackSummary.from_list(frames[index:])
            error = "".join(traceback.format_exception_only(exc)).rstrip()
            return "Traceback (the model code's frames):\n" + "".join(user.format()) + error
    return None
