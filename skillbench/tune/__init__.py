"""`skillbench tune` (docs/formats.md, issue 25): a better description, chosen on data it never
trained on.

- splits: the trigger prompts split into train, validation and test (stratified, seeded);
- proposer: the model call that writes a new description from the train results alone;
- rounds: measure, propose, measure; choose by validation; test once; the run folder;
- report: the table of rounds, the --json object, report.html;
- apply: the description line rewritten in SKILL.md, every other byte kept;
- command: the `tune` command itself.
"""
