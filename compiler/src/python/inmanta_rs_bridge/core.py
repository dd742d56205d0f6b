"""inmanta-core, imported once (after `deferral.install`). Without it the bridge still starts: the
first request is answered with IMPORT_ERROR, and nothing else reads these names."""

import sys

try:
    import inmanta.ast
    import inmanta.execute.proxy as proxy
    import inmanta.execute.util as inm_util
    import inmanta.plugins
    import inmanta.references
    import inmanta.resources
except ImportError as e:  # answered to the first request
    IMPORT_ERROR = f"inmanta-core is not installed in {sys.prefix} ({e}); the modules' Python code needs it"
    inmanta = sys.modules.get("inmanta")
    proxy = inm_util = None
else:
    IMPORT_ERROR = None
