"""``python -m llvm_backend.tools.conformance``: see ``llvm_backend.tools.conformance.runner``."""

import sys

from llvm_backend.tools.conformance.runner import main

sys.exit(main())
