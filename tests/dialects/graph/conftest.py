"""Graph files written next to their components (with the ports and paths of the run filled in) and
the servers that serve them."""

from __future__ import annotations

from pathlib import Path

import httpx

COMPONENTS = Path(__file__).parent / "components"


def write_graph(folder: Path, name: str, text: str, **values: object) -> Path:
    """``text`` with ``${KEY}`` replaced by ``values``, written to ``folder/name``."""
    for key, value in values.items():
        text = text.replace("${" + key + "}", str(value))
    path = folder / name
    path.write_text(text)
    return path


def predict(url: str, features: list[list[float]], **kwargs: object) -> httpx.Response:
    return httpx.post(
        f"{url}/api/v1.0/predictions", json={"data": {"ndarray": features}}, timeout=30, **kwargs
    )  # type: ignore[arg-type]
