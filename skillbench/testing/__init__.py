"""Test support shared by tests/ and bench/: the fake model server."""
