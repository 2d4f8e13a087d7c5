"""Helpers and corpora for the hardening suite (tests/test_hardening_*.py)."""
