"""Helpers for tests and demos: throwaway real services."""
