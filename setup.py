"""pbr reads the metadata from setup.cfg and the version from git tags."""

import setuptools

setuptools.setup(setup_requires=["pbr"], pbr=True)
