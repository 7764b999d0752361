"""What user code raises is its failure, but for a Ctrl-C in the main thread and a real cancellation
of the task awaiting it (`inferd.core.user_code`)."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from inferd.core.user_code import is_own_failure


class Own(BaseException):
    pass


@pytest.mark.parametrize("exc", [ValueError("x"), SystemExit(3), GeneratorExit(), Own()])
def test_what_model_code_raises_is_its_failure(exc: BaseException) -> None:
    assert is_own_failure(exc)


def test_a_keyboard_interrupt_is_the_models_only_off_the_main_thread() -> None:
    assert not is_own_failure(KeyboardInterrupt())
    seen: list[bool] = []
    thread = threading.Thread(target=lambda: seen.append(is_own_failure(KeyboardInterrupt())))
    thread.start()
    thread.join()
    assert seen == [True]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling is Python 3.11's")
def test_a_cancellation_goes_on_up_but_a_cancelled_error_of_the_models_does_not() -> None:
    async def model_raises() -> bool:
        try:
            raise asyncio.CancelledError("the model's own")
        except asyncio.CancelledError as exc:
            return is_own_failure(exc)

    async def cancelled() -> bool:
        started = asyncio.Event()

        async def load() -> bool:
            try:
                started.set()
                await asyncio.sleep(10)
            except asyncio.CancelledError as exc:
                return is_own_failure(exc)
            return True

        task = asyncio.create_task(load())
        await started.wait()
        task.cancel()
        return await task

    assert asyncio.run(model_raises())
    assert not asyncio.run(cancelled())
