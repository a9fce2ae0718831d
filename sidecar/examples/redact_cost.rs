//! How much the log redaction adds to one request's log line (`cargo run --release -p email-verdict --example redact_cost`).
fn main() {
    let line = "2026-11-25T04:37:52.703292Z  INFO request request_id=7b2fbda9-a4ae-485e-942b-c1a3e59f79bc method=GET route=lookup status=200 code=\"ok\" key_id=key_0123456789ab domain=mailinator.com cached=true micros=41\n";
    let n = 200_000;
    let t = std::time::Instant::now();
    let mut total = 0;
    for _ in 0..n {
        total += email_verdict::logging::redact(std::hint::black_box(line)).len();
    }
    let per = t.elapsed().as_nanos() as f64 / n as f64;
    println!("redact: {per:.0} ns per {}-byte request line ({total} bytes kept)", line.len());
}
