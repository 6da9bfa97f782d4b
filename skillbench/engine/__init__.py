"""The eval engine: plan (cases x arms x k), the async runner, scoring."""
