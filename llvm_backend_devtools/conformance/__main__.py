"""``python -m llvm_backend_devtools.conformance``: see ``llvm_backend_devtools.conformance.runner``."""

import sys

from llvm_backend_devtools.conformance.runner import main

sys.exit(main())
