"""Small utilities every floor uses: bounded reading of JSON and TOML inputs (inputs.py), JSON
that keeps a sandbox's bytes (lossless.py), credential scrubbing (scrub.py) and a JSON object
read out of a model's reply (jsonreply.py). They import nothing else of skillbench."""
