"""`inferd call`'s multipart form (inferd/client.py) sends a file's name as a quoted header parameter:
a name with quotes, a backslash or CR LF reaches a real server as the model's original file name,
quotes intact (a backslash too, though the server keeps only what follows it), CR LF as ``%0D%0A``
(as browsers send them), and adds no header to the part (here a ``Content-Type`` the name tries to
set)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferd.client import Given, call
from inferd.protocols.forms import safe_file_name
from tests.servers import RunningServer

HOSTILE = 'say "hi"\r\nContent-Type: evil\r\n\r\nx.txt'


@pytest.mark.parametrize("name", [HOSTILE, 'plain "quoted" name.txt', 'a \\" b.txt', "\r\n\r\n.txt"])
def test_a_file_name_reaches_the_model_and_cannot_add_headers(
    demo_server: RunningServer, tmp_path: Path, name: str
) -> None:
    upload = tmp_path / name
    upload.write_bytes(b"hello file")
    request, answer = call(demo_server.http_url, "classy", Given(data={"number": 1}, files={"data": upload}))
    assert answer.status == 200, answer.body
    predictions = answer.json()["predictions"]
    uploaded = predictions["args"]["data"]
    sent = name.replace("\r", "%0D").replace("\n", "%0A")
    assert uploaded["original_filename"] == safe_file_name(sent)  # what the server keeps of any name
    assert uploaded["original_filename"] == sent.rsplit("\\", 1)[-1]
    assert uploaded["content_type"] == "text/plain"  # from the .txt, not from the name
    assert predictions["content"] == "hello file"
    assert b"\r\nContent-Type: evil" not in request.body
