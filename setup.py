"""The package layout pyproject.toml cannot state: services/, shared/ and spark_backfill/ under `kafka_rekey`."""

from setuptools import find_namespace_packages, setup

ROOT = "kafka_rekey"
FOLDERS = ("services", "shared", "spark_backfill")

setup(
    packages=[f"{ROOT}.{name}" for name in find_namespace_packages(
        include=[f"{folder}*" for folder in FOLDERS], exclude=["*__pycache__*"])],
    package_dir={f"{ROOT}.{folder}": folder for folder in FOLDERS},
)
