//! `wrk` on loopback: one run, its output parsed (requests/s, latency percentiles, errors).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// How every run of one benchmark invocation is made.
#[derive(Debug, Clone)]
pub struct Wrk {
    pub seconds: u64,
    pub connections: u32,
    /// The CPU wrk is pinned to (`taskset`), when the machine has more than one.
    pub cpu: Option<usize>,
}

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    /// Answers that were not 2xx or 3xx.
    pub non_2xx: u64,
    /// connect + read + write + timeout errors.
    pub socket_errors: u64,
    /// CPU time of the serving processes per request, in microseconds (set by `Ctx::alternate`).
    pub cpu_us: Option<f64>,
    /// The same for the verdict service a gateway case calls (`Case::service`).
    pub service_cpu_us: Option<f64>,
}

impl Run {
    /// Every request answered 2xx/3xx, without socket errors.
    pub fn clean(&self) -> bool {
        self.requests > 0 && self.non_2xx == 0 && self.socket_errors == 0
    }
}

impl Wrk {
    /// `wrk -t1 -cN -dS --latency [-s script] http://addr{path}`.
    pub fn run(&self, addr: SocketAddr, path: &str, script: Option<&Path>) -> anyhow::Result<Run> {
        let mut cmd = match self.cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string(), "wrk"]);
                c
            }
            None => Command::new("wrk"),
        };
        cmd.args(["-t1", &format!("-c{}", self.connections), &format!("-d{}s", self.seconds), "--latency"]);
        if let Some(s) = script {
            cmd.arg("-s").arg(s);
        }
        cmd.arg(format!("http://{addr}{path}"));
        let out = cmd.output().context("cannot run wrk (apt-get install wrk; make bench installs it)")?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!("wrk failed ({}):\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        parse(&text).with_context(|| format!("cannot read wrk's output:\n{text}"))
    }
}

/// Reads wrk's `--latency` report.
pub fn parse(text: &str) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let mut rps = None;
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", v] => rps = Some(v.parse()?),
            ["50%", v] => run.p50_ms = millis(v)?,
            ["99%", v] => run.p99_ms = millis(v)?,
            [n, "requests", "in", ..] => run.requests = n.parse()?,
            ["Non-2xx", "or", "3xx", "responses:", n] => run.non_2xx = n.parse()?,
            ["Socket", "errors:", rest @ ..] => {
                run.socket_errors = rest.iter().filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok()).sum()
            }
            _ => {}
        }
    }
    run.rps = rps.context("no Requests/sec line")?;
    Ok(run)
}

/// "635.00us" / "2.01ms" / "1.20s" → milliseconds.
fn millis(v: &str) -> anyhow::Result<f64> {
    let (num, factor) = if let Some(n) = v.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else {
        bail!("unknown latency unit in {v:?}")
    };
    Ok(num.parse::<f64>()? * factor)
}

/// A script that sends GET for each of `paths` in turn (built once, in `init`).
pub fn rotating_get_script(paths: &[String]) -> String {
    let list: Vec<String> = paths.iter().map(|p| format!("  {p:?},")).collect();
    format!(
        "-- GET each path in turn (one per API key: a pro key admits 50 requests a second).\n\
         local paths = {{\n{}\n}}\nlocal requests = {{}}\nlocal i = 0\n\
         function init(args)\n  for k, p in ipairs(paths) do requests[k] = wrk.format(\"GET\", p) end\nend\n\
         function request()\n  i = i % #requests + 1\n  return requests[i]\nend\n",
        list.join("\n")
    )
}

/// A script that sends one fixed POST, with `headers` besides the content type.
pub fn post_script(content_type: &str, body: &str, headers: &[(&str, &str)]) -> String {
    let mut s = format!("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = {content_type:?}\n");
    for (name, value) in headers {
        s.push_str(&format!("wrk.headers[{name:?}] = {value:?}\n"));
    }
    s + &format!("wrk.body = [==[{body}]==]\n")
}

/// [`post_script`] for a body of any bytes (a gRPC frame): each byte that is not printable
/// ASCII written as a Lua decimal escape.
pub fn post_script_bytes(content_type: &str, body: &[u8], headers: &[(&str, &str)]) -> String {
    let mut s = format!("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = {content_type:?}\n");
    for (name, value) in headers {
        s.push_str(&format!("wrk.headers[{name:?}] = {value:?}\n"));
    }
    let escaped: String = body
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' => format!("\\{}", char::from(b)),
            0x20..=0x7e => char::from(b).to_string(),
            _ => format!("\\{b:03}"),
        })
        .collect();
    s + &format!("wrk.body = \"{escaped}\"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_escaped_for_lua() {
        let script = post_script_bytes("application/grpc", b"\0\x05a\"\\", &[]);
        assert!(script.ends_with("wrk.body = \"\\000\\005a\\\"\\\\\"\n"), "{script}");
    }

    #[test]
    fn parses_a_latency_report() {
        let text = "Running 10s test @ http://127.0.0.1:1/\n  1 threads and 32 connections\n\
            \x20 Thread Stats   Avg      Stdev     Max   +/- Stdev\n\
            \x20   Latency     1.02ms  300.00us   9.00ms   90.00%\n\
            \x20 Latency Distribution\n     50%  635.00us\n     75%    1.00ms\n     90%    1.50ms\n     99%    2.01ms\n\
            \x20 123456 requests in 10.00s, 45.67MB read\n  Socket errors: connect 0, read 2, write 0, timeout 1\n\
            \x20 Non-2xx or 3xx responses: 7\nRequests/sec:  12345.67\nTransfer/sec:      4.56MB\n";
        let run = parse(text).unwrap();
        assert_eq!((run.requests, run.non_2xx, run.socket_errors), (123456, 7, 3));
        assert!((run.rps - 12345.67).abs() < 1e-9);
        assert!((run.p50_ms - 0.635).abs() < 1e-9 && (run.p99_ms - 2.01).abs() < 1e-9);
        assert!(!run.clean());
        assert!(parse("nothing").is_err());
    }
}
