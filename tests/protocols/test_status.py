"""What error bodies may say: no object addresses, and (5xx) no tracebacks or paths."""

from __future__ import annotations

from inferd.core.errors import InvalidInput
from inferd.protocols.status import error_message, scrubbed, without_addresses


def test_object_addresses_are_left_out_of_every_error_message() -> None:
    pillow = InvalidInput(
        "cannot decode image/png body: cannot identify image file <_io.BytesIO object at 0x7f3a2b1c0d90>"
    )
    assert error_message(pillow) == "cannot decode image/png body: cannot identify image file"
    assert scrubbed("bad value <function f at 0x7F00AB> in /srv/app/model.py") == "bad value in <path>"
    assert without_addresses("shape [2, 3] at 0 offset") == "shape [2, 3] at 0 offset"
