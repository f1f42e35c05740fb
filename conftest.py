# Grading machinery for `pytest katas/NN_name` (options --impl / --solutions, verdicts,
# scoreboard) and the self-tests' runner of grading sessions.
pytest_plugins = ["graders.core.plugin", "pytester"]
