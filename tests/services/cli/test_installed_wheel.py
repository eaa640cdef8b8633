"""The wheel stands on its own: built from the checkout and installed into a fresh virtualenv, it finds the demo's
catalog inside the package and runs commands from a directory outside the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding only the built wheel; the third-party dependencies are the test interpreter's own
    (a path line, so none of its `.pth` files, the checkout's editable install among them, takes effect)."""
    root = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(root / "dist"), str(CHECKOUT)], check=True,
                   timeout=300)
    [wheel] = (root / "dist").glob("rekey-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--no-compile", "-q", str(wheel)],
                   check=True, timeout=300)
    site_packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip()
    (Path(site_packages) / "checkout-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _in_venv(venv: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)})


def test_the_installed_demo_finds_its_catalog_in_the_package(installed: Path, tmp_path: Path) -> None:
    found = _in_venv(installed, str(installed / "bin" / "python"), "-c",
                     "import services; from services.devtools.demo.run import CATALOG; "
                     "print(services.__file__); print(CATALOG)", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    package, catalog = map(Path, found.stdout.split())
    assert package.is_relative_to(installed) and catalog.is_relative_to(installed), found.stdout
    assert catalog.read_text() == (CHECKOUT / "catalog" / "topics.yaml").read_text()

    explain = ["explain", "--org", "org-7", "--interaction", "int-42", "--catalog", str(catalog)]
    routed = _in_venv(installed, str(installed / "bin" / "rekey"), *explain, cwd=tmp_path)
    assert routed.returncode == 0, routed.stderr
    from_checkout = subprocess.run([str(Path(sys.executable).parent / "rekey"), *explain], capture_output=True,
                                   text=True, timeout=120, check=True)
    assert json.loads(routed.stdout) == json.loads(from_checkout.stdout)

    without_catalog = _in_venv(installed, str(installed / "bin" / "rekey"), "explain", "--org", "o", "--interaction",
                               "i", cwd=tmp_path)
    assert without_catalog.returncode == 2
    assert without_catalog.stderr.splitlines() == [
        "error: topic catalog catalog/topics.yaml not found (set --catalog or REKEY_CATALOG_PATH)"]
