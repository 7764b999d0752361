"""Train the iris classifier and save it as ``model.joblib`` (also read by the benchmark's peers)."""

from __future__ import annotations

import sys
from pathlib import Path

import joblib

sys.path.insert(0, str(Path(__file__).parent))
from model import train

if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "model.joblib"
    joblib.dump(train(), target)
    print(f"saved {target}")
