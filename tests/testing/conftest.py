"""The testing kit's tests run users' test files in a child pytest (``pytester``)."""

pytest_plugins = ["pytester"]
