"""Packaging that pyproject.toml cannot say alone: the ``derivations/`` folder installs as ``symuat_paper``.

Everything else (metadata, dependencies, scripts) is in pyproject.toml.  Nothing named
``derivations`` is installed, so the paper's derivations cannot collide with another
project's top-level package.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["symuat", "symuat.*"]), "symuat_paper"],
    package_dir={"symuat_paper": "derivations"},
)
