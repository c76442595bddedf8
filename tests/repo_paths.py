"""The checkout's folders, for tests in any folder of tests/."""

import os

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
REFERENCES = os.path.join(TESTS, "references")
