"""Helpers of the tests (no tests here): runs and fixtures shared by the test files of several tiers."""
