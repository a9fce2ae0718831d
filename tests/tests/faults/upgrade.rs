//! Graceful upgrade under load: a new `serve --upgrade` takes the listening sockets over from the
//! running one (Pingora sends them over the upgrade socket when the old one gets SIGQUIT); the
//! old one drains and exits. No client may see a refused, reset or cut-short connection.

use std::time::{Duration, Instant};

use email_verdict_tests::verdict::check_ok;
use email_verdict_tests::{ChildProcess, Load, Request, Shot, start_with, wait_for};

use super::{CLIENT_TIMEOUT, PACE, PROGRESS, assert_all_answered, lookup, nonempty};

/// Pingora's old process keeps accepting 5 s after SIGQUIT, then drains (1 s grace + at most
/// 5 s for requests in flight): far less than this.
const OLD_EXIT_BOUND: Duration = Duration::from_secs(25);

#[test]
fn graceful_upgrade_under_load_drops_no_request() {
    let (mut sc, _nsd) = start_with(|b| b.keys(&["pro", "pro", "pro"]));
    let (addr, admin, keys) = (sc.addr(), sc.admin_addr(), sc.keys().to_vec());
    // Workers 0..3 look up (public listener); worker 3 polls /healthz (admin listener).
    let load = Load::start(4, PACE, move |w, _| match w {
        0..3 => lookup(addr, "ownmail.example", &keys[w], "api"),
        _ => Shot::new(admin, Request::get("/healthz").timeout(CLIENT_TIMEOUT), "admin"),
    });
    load.wait_each(5, PROGRESS);
    let mut new = sc.spawn_upgrade();
    wait_for_line(&mut new, "upgrade: waiting for the listeners");
    sc.process().signal("QUIT");
    let quit = Instant::now();
    wait_for_line(&mut new, " ready listen=");
    let mut old = sc.replace_process(new);
    let status = old.wait_timeout(OLD_EXIT_BOUND).unwrap_or_else(|| panic!("old process still running"));
    assert!(status.success(), "old process: {status}\n{}", old.stderr_text());
    let gone = Instant::now();
    load.wait_each(5, PROGRESS);
    let outcomes = load.stop();

    assert_all_answered(&outcomes);
    for o in &outcomes {
        let r = o.response().expect("answered");
        match o.tag.as_str() {
            "api" => drop(check_ok(r, &o.to_string())),
            _ => assert_eq!((r.status, r.text().trim()), (200, "ok"), "{o}"),
        }
    }
    nonempty(outcomes.iter().filter(|o| o.within(quit, gone)).collect(), "the handover");
    for w in 0..4 {
        nonempty(outcomes.iter().filter(|o| o.worker == w && o.started >= gone).collect(), "the time after");
    }
    assert!(sc.stderr_text().contains("route=\"lookup\""), "the new process served no lookup");
    assert!(sc.process().try_wait().is_none(), "the new process exited");
}

/// Waits (bounded) until `p`'s stderr has a line containing `text`; panics if it exits first.
fn wait_for_line(p: &mut ChildProcess, text: &str) {
    wait_for(&format!("a line with {text:?} from the new process"), Duration::from_secs(30), || {
        if let Some(status) = p.try_wait() {
            panic!("the new process exited ({status}) before logging {text:?}:\n{}", p.stderr_text());
        }
        p.stderr_text().lines().any(|l| l.contains(text)).then_some(())
    });
}
