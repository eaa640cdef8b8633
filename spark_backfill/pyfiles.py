"""rekey's own code as one zip archive for `spark.submit.pyFiles`: what a cluster's executors import it from.

The archive holds the packages `kafka_rekey.services`, `kafka_rekey.shared` and `kafka_rekey.spark_backfill` (with
their data files, e.g. the Avro schemas) under `kafka_rekey/`, from where this process imports them, so it is built
from a checkout or an installed wheel alike. Its name carries a hash of its content: executors and the driver's
file server never serve a stale copy under the same name. Third-party dependencies are not in it; the executors'
Python must have them (see docs/BACKFILL.md).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import zipfile
from pathlib import Path

PACKAGES = ("kafka_rekey.services", "kafka_rekey.shared", "kafka_rekey.spark_backfill")
# Installed, `kafka_rekey` is a namespace package; here it is a regular one, so a task imports rekey from the
# archive first even where the executors' Python has rekey installed.
ROOT_INIT = ("kafka_rekey/__init__.py", b'"""rekey, as its pyFiles archive ships it."""\n')
# A fixed timestamp: the same sources give the same bytes, so the same name.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _files() -> list[tuple[Path, str]]:
    """Every file of the packages (no bytecode caches), with its path inside the archive, in a stable order."""
    files = []
    for name in PACKAGES:
        package_dir = Path(importlib.import_module(name).__file__ or "").parent
        for path in sorted(package_dir.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                files.append((path, f"{name.replace('.', '/')}/{path.relative_to(package_dir).as_posix()}"))
    return files


def build_archive(directory: Path) -> Path:
    """Write `rekey-<content hash>.zip` into `directory` (unless it is there already) and return its path."""
    files = _files()
    contents = [ROOT_INIT, *((arcname, path.read_bytes()) for path, arcname in files)]
    digest = hashlib.sha256()
    for arcname, content in contents:
        digest.update(arcname.encode() + b"\0" + content + b"\0")
    target = Path(directory) / f"rekey-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    os.close(handle)
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, content in contents:
            info = zipfile.ZipInfo(arcname, _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    os.replace(partial, target)  # a concurrent builder writes the same bytes
    return target
