"""The built-in agent: the loop, its tools (run in the arm's sandbox), the transcript."""
