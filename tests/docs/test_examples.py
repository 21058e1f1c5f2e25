"""The path "Test my agent or handler in CI" shows the pytest plugin's example that the
how-to's test runs (tests/testing/test_plugin.py); the site's SDK example on "Drive it
like Azure" runs with the rest of its page, in tests/docs/test_shell_examples.py (its
policy example: tests/arm/test_readme_example.py)."""

from __future__ import annotations

from tests.support.docpages import blocks, page


def test_the_path_shows_the_plugin_example_the_how_to_runs() -> None:
    """tests/testing/test_plugin.py runs the how-to page's block, and shows it can fail:
    the path's page shows that block, character for character, and no other."""
    from tests.testing.test_plugin import readme_example

    assert blocks(page("paths/test-in-ci.md"), "python") == [readme_example()]
