import importlib.util

# The PyMC tests belong to the `pymc` extra (PyTensor 2.38.x); without PyMC they are not collected.
collect_ignore = [] if importlib.util.find_spec("pymc") else ["pymc"]
