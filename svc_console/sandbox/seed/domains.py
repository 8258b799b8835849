"""Every market domain type (A1-A22) and the endpoints its providers may offer."""

from svc_console.sandbox.seed.domains_data import DOMAINS as _DATA
from svc_console.sandbox.seed.domains_media import DOMAINS as _MEDIA
from svc_console.sandbox.seed.domains_services import DOMAINS as _SERVICES
from svc_console.sandbox.seed.schema import Domain

DOMAINS: dict[str, Domain] = {**_MEDIA, **_DATA, **_SERVICES}
