"""Rendering results: the terminal report and the live progress display."""
