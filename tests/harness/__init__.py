"""Shared test helpers: real services for tests (see tests/conftest.py for the fixtures)."""
