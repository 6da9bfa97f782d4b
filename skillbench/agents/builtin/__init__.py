"""The built-in agent: its loop, its tools (run in the arm's sandbox) and the registry entry."""
