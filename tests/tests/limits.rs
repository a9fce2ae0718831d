//! Plan limits of the spec: the daily quota (402 quota_exceeded) and the per-second burst
//! (429 rate_limit_exceeded). These requests never retry on 429.

use email_verdict_tests::verdict::{check_error, check_ok, error_code};
use email_verdict_tests::{Request, Response, api_target, start_with};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn free_plan_allows_three_lookups_a_day() {
    let (sc, _nsd) = start_with(|b| b.keys(&["free"]));
    let key = sc.key().to_string();
    for i in 1..=3 {
        let resp = sc.send(&Request::get(&api_target("ownmail.example", &key)));
        check_ok(&resp, &format!("free lookup {i} of 3"));
        // stay under the 1 request/s burst
        std::thread::sleep(Duration::from_millis(1100));
    }
    let resp = sc.send(&Request::get(&api_target("ownmail.example", &key)));
    check_error(&resp, 402, "quota_exceeded", "fourth lookup of a free key");
}

#[test]
fn burst_over_the_plan_limit_is_refused_then_recovers() {
    // basic: 10 requests/s
    let (sc, _nsd) = start_with(|b| b.keys(&["basic"]));
    let sc = Arc::new(sc);
    sc.lookup_ok("ownmail.example");
    std::thread::sleep(Duration::from_millis(1100));
    const N: usize = 30;
    let barrier = Arc::new(Barrier::new(N));
    let responses: Vec<Response> = (0..N)
        .map(|_| {
            let (sc, barrier) = (sc.clone(), barrier.clone());
            std::thread::spawn(move || {
                let req = Request::get(&api_target("ownmail.example", sc.key()));
                barrier.wait();
                sc.send(&req)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();
    let ok = responses.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Response> = responses.iter().filter(|r| r.status == 429).collect();
    let other: Vec<String> = responses
        .iter()
        .filter(|r| r.status != 200 && r.status != 429)
        .map(|r| format!("{} {:?}", r.status, error_code(r)))
        .collect();
    assert!(other.is_empty(), "unexpected answers: {other:?}");
    assert!(!limited.is_empty(), "{N} simultaneous requests on a 10/s key: none refused");
    assert!((1..=20).contains(&ok), "{ok} of {N} simultaneous requests passed a 10/s limit");
    check_error(limited[0], 429, "rate_limit_exceeded", "over the burst limit");
    std::thread::sleep(Duration::from_millis(1100));
    sc.lookup_ok("ownmail.example");
}
