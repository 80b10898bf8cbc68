"""The built-in client profiles, one module per client, found rather than listed: importing this
package imports every module in it (`discover`), and each module registers its profile
(`conformance.clients.profile.register_profile`). A new client is a new module here; no list
elsewhere names it.

Rules: the modules are imported in name order (pkgutil's), which is the registry's order; a module
here imports only `conformance.core`, `conformance.wire`, `conformance.clients` and the standard
library.
"""

import importlib
import pkgutil


def discover() -> list[str]:
    """Import every module on this package's path (each registers its profile; one already
    imported is not imported again); returns the modules' names."""
    names = [info.name for info in pkgutil.iter_modules(__path__, __name__ + ".")]
    for name in names:
        importlib.import_module(name)
    return names


discover()
