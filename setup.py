"""Build the optional compiled merge loop; all package metadata is in pyproject.toml.

`core._merge_kernel` speeds up `core.merge.merge_pairs` ~10x. It is optional: without a
C compiler the install still succeeds and `core.merge` uses its pure-Python loop.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "core._merge_kernel",
            ["core/_merge_kernel.c"],
            optional=True,
        )
    ]
)
