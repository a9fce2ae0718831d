//! `email-verdict keys create|list|revoke` on the state of a running server.

use email_verdict_tests::sidecar::{is_key, is_key_id};
use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Sidecar, start_with, wait_for};
use std::time::{Duration, Instant};

/// Polls `lookup` (every 50 ms, up to 2 s) until its status is `status`; returns the time taken.
fn time_until_status(sc: &Sidecar, key: &str, status: u16) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if sc.lookup_with_key("ownmail.example", key).status == status {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn create_prints_the_key_alone_on_the_last_line_and_list_never_shows_it() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let out = sc.cli().run(&["keys", "create", "--plan", "free", "--name", "t"]);
    out.expect_code(0, "keys create --plan free --name t");
    let last = out.stdout.trim_end_matches(['\n', '\r']).lines().last().unwrap_or("");
    assert!(is_key(last), "last stdout line is not the key alone: {last:?}\n{out}");
    let key = last;
    let hex = &key[3..];

    let list = sc.cli().run(&["keys", "list"]);
    list.expect_code(0, "keys list");
    assert!(!list.stdout.contains(hex) && !list.stderr.contains(hex), "keys list shows the key\n{list}");
    let row = sc.cli().row_named("t");
    assert!(is_key_id(&row.id), "id {:?} is not key_ + 12 hex", row.id);
    assert_eq!(
        (row.plan.as_str(), row.status.as_str(), row.used_today.as_str()),
        ("free", "active", "0"),
        "row: {row:?}"
    );
}

#[test]
fn every_plan_can_be_created_and_is_listed() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    for plan in ["free", "basic", "premium", "pro"] {
        let key = sc.cli().create_key(plan, &format!("plan-{plan}"));
        let row = sc.cli().row_named(&format!("plan-{plan}"));
        assert_eq!(row.plan, plan, "{row:?}");
        let resp = sc.lookup_with_key("ownmail.example", &key);
        assert_eq!(resp.status, 200, "a fresh {plan} key:\n{resp}");
    }
    let ids: std::collections::HashSet<String> = sc.cli().list().into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 4, "key ids are not unique");
}

#[test]
fn used_today_counts_a_lookup() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let key = sc.cli().create_key("pro", "counted");
    wait_for("the new key to be honoured", Duration::from_secs(2), || {
        (sc.lookup_with_key("ownmail.example", &key).status == 200).then_some(())
    });
    let mut last = None;
    let counted = (0..100).any(|_| {
        let row = sc.cli().row_named("counted");
        let done = row.used_today == "1";
        last = Some(row);
        std::thread::sleep(Duration::from_millis(50));
        done
    });
    assert!(counted, "after one 200, keys list still shows {last:?} (expected used_today 1)");
}

#[test]
fn revoked_key_is_refused_within_one_second() {
    let (sc, _nsd) = start_with(|b| b.keys(&["pro"]));
    let key = sc.key().to_string();
    assert_eq!(sc.lookup("ownmail.example").status, 200);
    let id = sc.cli().row_named("test-0").id;
    sc.cli().run(&["keys", "revoke", &id]).expect_code(0, "keys revoke");
    let took = time_until_status(&sc, &key, 401).expect("a revoked key still works 2 s after keys revoke");
    assert!(took <= Duration::from_millis(1200), "revocation honoured only after {took:?}");
    check_error(&sc.lookup("ownmail.example"), 401, "api_key_invalid", "lookup with a revoked key");
    assert_eq!(sc.cli().row_named("test-0").status, "revoked");
}

#[test]
fn key_created_while_serving_is_honoured_within_one_second() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let key = sc.cli().create_key("pro", "late");
    let took = time_until_status(&sc, &key, 200).expect("a key created while serving is still refused after 2 s");
    assert!(took <= Duration::from_millis(1200), "new key honoured only after {took:?}");
}

#[test]
fn state_never_holds_the_plaintext_key() {
    let (sc, _nsd) = start_with(|b| b.keys(&["pro", "free"]));
    for key in sc.keys() {
        assert_eq!(sc.lookup_with_key("ownmail.example", key).status, 200);
    }
    // the database, its journal/WAL side files and the lease journals (`state.db-leases/`)
    let side: Vec<_> = std::fs::read_dir(sc.dir())
        .expect("read state dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("state.db")))
        .collect();
    let mut files = Vec::new();
    for path in side {
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path).expect("read a side directory").filter_map(|e| e.ok().map(|e| e.path())),
            );
        } else {
            files.push(path);
        }
    }
    assert!(files.iter().any(|f| f.extension().is_some_and(|e| e == "journal")), "no lease journal: {files:?}");
    assert!(!files.is_empty(), "no state.db* file in {}", sc.dir().display());
    for f in files {
        let bytes = std::fs::read(&f).expect("read state file");
        for key in sc.keys() {
            for needle in [key.as_str(), &key[3..], &key[key.len() - 20..]] {
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                    "{} contains (part of) the plaintext key {needle}",
                    f.display()
                );
            }
        }
    }
}

#[test]
fn revoking_an_unknown_id_exits_2_with_one_line() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let out = sc.cli().run(&["keys", "revoke", "key_000000000000"]);
    out.expect_code(2, "keys revoke <unknown id>");
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected a one-line message on stderr\n{out}");
    assert!(!out.stderr.contains("panicked"), "{out}");
}

#[test]
fn bad_usage_exits_2_without_a_stack_trace() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let cases: &[&[&str]] = &[
        &["keys", "create", "--plan", "gold"],
        &["keys", "create"],
        &["keys", "create", "--plan", "free", "--allow-ip", "not-a-cidr"],
        &["keys", "revoke"],
        &["keys", "frobnicate"],
    ];
    for args in cases {
        let out = sc.cli().run(args);
        out.expect_code(2, &args.join(" "));
        assert!(!out.stderr.trim().is_empty(), "{args:?}: no message\n{out}");
        assert!(
            !out.stderr.contains("panicked") && !out.stderr.contains("stack backtrace"),
            "{args:?}: stack trace\n{out}"
        );
    }
    assert!(sc.cli().list().is_empty(), "a failed create left a key behind");
}

/// operations.md: exit code 2 comes "with a one-line message naming the problem".
#[test]
fn usage_errors_are_one_line() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let cases: &[&[&str]] = &[&["keys", "create", "--plan", "gold"], &["keys", "revoke", "key_000000000000"]];
    for args in cases {
        let out = sc.cli().run(args);
        out.expect_code(2, &args.join(" "));
        let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: expected a one-line message on stderr, got {lines:#?}");
    }
}
