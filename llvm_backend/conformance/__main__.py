"""``python -m llvm_backend.conformance``: see ``llvm_backend.conformance.runner``."""

import sys

from llvm_backend.conformance.runner import main

sys.exit(main())
