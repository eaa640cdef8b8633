"""The virtualenv the Quix Streams baseline runs in: Quix pins an older confluent-kafka than rekey does.

Created once under `.cache/venv-quix` (a `venv` plus `pip install quixstreams==QUIX_VERSION`); `quix_python()`
returns its interpreter, or None with the reason when it cannot be made (no network to the package index).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_rekey_dev.embedded.maven import REPO_ROOT

QUIX_VERSION = "3.28.0"
VENV = REPO_ROOT / ".cache" / "venv-quix"


def quix_python() -> tuple[Path | None, str]:
    """(interpreter with quixstreams, "") or (None, why not)."""
    python = VENV / "bin" / "python"
    marker = VENV / f".quixstreams-{QUIX_VERSION}"
    if marker.exists():
        return python, ""
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, capture_output=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"quixstreams=={QUIX_VERSION}"], check=True,
                       capture_output=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as error:
        detail = getattr(error, "stderr", b"") or b""
        return None, f"could not install quixstreams {QUIX_VERSION} into {VENV}: {error} {detail.decode()[-300:]}"
    marker.touch()
    return python, ""
