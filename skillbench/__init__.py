"""skillbench: does an agent skill make an LLM agent better, and does it get picked?"""

__version__ = "0.1.0"
