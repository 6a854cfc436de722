import importlib.util

# The PyMC tests belong to the `pymc` extra (PyMC 6.4, nutpie); without PyMC they are not collected.
collect_ignore = [] if importlib.util.find_spec("pymc") else ["pymc"]
