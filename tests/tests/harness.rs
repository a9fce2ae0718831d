//! Checks of the harness itself and of the fixture zones, without the sidecar: NSD serves every
//! name the other tests rely on, the counter counts, NSD restarts on its port.

use email_verdict_tests::dns::{self, BlackHole, qtype, rcode};
use email_verdict_tests::nsd::{fixture_zones, nsd_binary};
use email_verdict_tests::{DnsCounter, Nsd};
use std::process::Command;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(2);

#[test]
fn fixture_zones_pass_nsd_checkzone() {
    let checkzone = nsd_binary().with_file_name("nsd-checkzone");
    for (zone, file) in fixture_zones() {
        let out = Command::new(&checkzone)
            .arg(&zone)
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", checkzone.display()));
        assert!(
            out.status.success(),
            "nsd-checkzone {zone} {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn nsd_serves_every_name_the_tests_use() {
    let nsd = Nsd::start();
    // (name, type, rcode, number of answers)
    let table: &[(&str, u16, u8, u16)] = &[
        ("mailinator.com", qtype::MX, rcode::NOERROR, 1),
        ("mail.mailinator.com", qtype::A, rcode::NOERROR, 1),
        ("sub.mailinator.com", qtype::MX, rcode::NOERROR, 1),
        ("gmail.com", qtype::MX, rcode::NOERROR, 2),
        ("gmail-smtp-in.l.google.com", qtype::A, rcode::NOERROR, 1),
        ("gmail-smtp-in.l.google.com", qtype::AAAA, rcode::NOERROR, 1),
        ("alt1.gmail-smtp-in.l.google.com", qtype::A, rcode::NOERROR, 1),
        ("alt1.gmail-smtp-in.l.google.com", qtype::AAAA, rcode::NOERROR, 1),
        ("shopco.example", qtype::MX, rcode::NOERROR, 1),
        ("shopco-example.mail.protection.outlook.com", qtype::A, rcode::NOERROR, 1),
        ("shopco-example.mail.protection.outlook.com", qtype::AAAA, rcode::NOERROR, 0),
        ("ownmail.example", qtype::MX, rcode::NOERROR, 2),
        ("mx1.ownmail.example", qtype::A, rcode::NOERROR, 1),
        ("mx1.ownmail.example", qtype::AAAA, rcode::NOERROR, 1),
        ("mx2.ownmail.example", qtype::A, rcode::NOERROR, 1),
        ("MX2.OWNMAIL.EXAMPLE", qtype::A, rcode::NOERROR, 1),
        ("mx2.ownmail.example", qtype::AAAA, rcode::NOERROR, 0),
        ("nomx.example", qtype::A, rcode::NOERROR, 1),
        ("nomx.example", qtype::MX, rcode::NOERROR, 0),
        ("nullmx.example", qtype::MX, rcode::NOERROR, 1),
        ("xn--bcher-kva.example", qtype::MX, rcode::NOERROR, 1),
        ("mx.ownmail.example", qtype::A, rcode::NOERROR, 1),
        ("shop.pp.ua", qtype::MX, rcode::NOERROR, 1),
        ("mx.shop.pp.ua", qtype::A, rcode::NOERROR, 1),
        ("doesnotexist.example", qtype::MX, rcode::NXDOMAIN, 0),
        ("sub.ownmail.example", qtype::MX, rcode::NXDOMAIN, 0),
    ];
    for &(name, t, rc, answers) in table {
        for (proto, reply) in
            [("udp", dns::query_udp(nsd.addr(), name, t, T)), ("tcp", dns::query_tcp(nsd.addr(), name, t, T))]
        {
            let h = reply.unwrap_or_else(|e| panic!("{proto} {name} {t}: {e}"));
            assert_eq!(
                (h.rcode, h.answers, h.authoritative),
                (rc, answers, true),
                "{proto} {name} type {t}: (rcode, answers, aa)"
            );
        }
    }
}

#[test]
fn nsd_refuses_names_outside_its_zones() {
    let nsd = Nsd::start();
    let h = dns::query_udp(nsd.addr(), "example.org", qtype::MX, T).expect("reply");
    assert_eq!(h.rcode, rcode::REFUSED);
}

#[test]
fn counter_forwards_and_counts_udp_and_tcp() {
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    for _ in 0..3 {
        let h = dns::query_udp(counter.addr(), "OwnMail.Example.", qtype::MX, T).expect("udp");
        assert_eq!((h.rcode, h.answers), (rcode::NOERROR, 2));
    }
    let h = dns::query_tcp(counter.addr(), "ownmail.example", qtype::MX, T).expect("tcp");
    assert_eq!((h.rcode, h.answers), (rcode::NOERROR, 2));
    let h = dns::query_udp(counter.addr(), "doesnotexist.example", qtype::A, T).expect("udp");
    assert_eq!(h.rcode, rcode::NXDOMAIN);
    assert_eq!(counter.count("ownmail.example", qtype::MX), 4);
    assert_eq!(counter.count("OWNMAIL.EXAMPLE.", qtype::MX), 4);
    assert_eq!(counter.count("ownmail.example", qtype::A), 0);
    assert_eq!(counter.count("doesnotexist.example", qtype::A), 1);
}

#[test]
fn nsd_stops_and_starts_again_on_the_same_port() {
    let mut nsd = Nsd::start();
    let port = nsd.port();
    nsd.stop();
    assert!(
        dns::query_udp(nsd.addr(), "example", qtype::SOA, Duration::from_millis(300)).is_err(),
        "a stopped NSD still answers"
    );
    nsd.restart();
    assert_eq!(nsd.port(), port);
    let h = dns::query_udp(nsd.addr(), "ownmail.example", qtype::MX, T).expect("reply");
    assert_eq!(h.answers, 2);
}

#[test]
fn black_hole_never_answers() {
    let bh = BlackHole::start();
    let started = Instant::now();
    let r = dns::query_udp(bh.addr(), "ownmail.example", qtype::MX, Duration::from_millis(200));
    assert!(r.is_err());
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn uppercasing_counter_rewrites_mx_targets_only() {
    let nsd = Nsd::start();
    let plain = dns::query_udp_raw(nsd.addr(), "ownmail.example", qtype::MX, T).expect("reply");
    let counter = DnsCounter::start_uppercasing_mx(nsd.addr());
    let upper = dns::query_udp_raw(counter.addr(), "ownmail.example", qtype::MX, T).expect("reply");
    let has = |m: &[u8], s: &[u8]| m.windows(s.len()).any(|w| w == s);
    assert!(has(&plain, b"\x03mx2") && has(&plain, b"\x03mx1"));
    assert!(has(&upper, b"\x03MX2") && has(&upper, b"\x03MX1"));
    assert_eq!(plain.len(), upper.len());
    // everything else (header but the id, question, A/AAAA rdata) is untouched
    let diff: Vec<usize> = (2..plain.len()).filter(|&i| plain[i] != upper[i]).collect();
    assert_eq!(diff.len(), 4, "only the letters of mx1/mx2 change: {diff:?}");
    let h = dns::parse_reply_header(&upper).expect("header");
    assert_eq!((h.rcode, h.answers), (rcode::NOERROR, 2));
}
