//! Load for fault tests: a few client threads, each sending one request after another (its
//! own pace apart) until stopped, recording every outcome — a complete response or the I/O
//! error — with when it started and ended, so a test can judge each request against the
//! moments it broke and repaired something.
//!
//! Bounded: a worker stops by itself after [`MAX_RUN`] or [`MAX_REQUESTS`], whichever first.

use crate::http::{Request, Response};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a worker runs.
pub const MAX_RUN: Duration = Duration::from_secs(90);
/// The most requests one worker sends.
pub const MAX_REQUESTS: u64 = 20_000;

/// One request to send: where, what, and a tag the test groups outcomes by.
pub struct Shot {
    pub addr: SocketAddr,
    pub request: Request,
    pub tag: String,
}

impl Shot {
    pub fn new(addr: SocketAddr, request: Request, tag: impl Into<String>) -> Shot {
        Shot { addr, request, tag: tag.into() }
    }
}

/// What became of one request.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub worker: usize,
    pub seq: u64,
    pub tag: String,
    pub target: String,
    pub started: Instant,
    pub finished: Instant,
    /// Since the load started, for messages.
    pub at: Duration,
    /// The response, or the I/O error (refused, reset, timed out, cut short).
    pub result: Result<Response, String>,
}

impl Outcome {
    pub fn status(&self) -> Option<u16> {
        self.result.as_ref().ok().map(|r| r.status)
    }

    pub fn response(&self) -> Option<&Response> {
        self.result.as_ref().ok()
    }

    pub fn took(&self) -> Duration {
        self.finished - self.started
    }

    /// Sent at or after `from` and answered (or failed) before `to`: wholly inside a window.
    pub fn within(&self, from: Instant, to: Instant) -> bool {
        self.started >= from && self.finished <= to
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "worker {} #{} [{}] {} at +{:?}, took {:?}: ",
            self.worker,
            self.seq,
            self.tag,
            self.target,
            self.at,
            self.took()
        )?;
        match &self.result {
            Ok(r) => write!(f, "{r}"),
            Err(e) => write!(f, "I/O error: {e}"),
        }
    }
}

type Make = dyn Fn(usize, u64) -> Shot + Send + Sync;

/// Running workers; stopped (and joined) by [`Load::stop`] or on drop.
pub struct Load {
    stop: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
    done: Arc<Vec<AtomicUsize>>,
    workers: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts `workers` threads; worker `w` sends `make(w, n)` as its `n`th request, waiting
    /// `pace` after each answer.
    pub fn start(workers: usize, pace: Duration, make: impl Fn(usize, u64) -> Shot + Send + Sync + 'static) -> Load {
        let make: Arc<Make> = Arc::new(make);
        let stop = Arc::new(AtomicBool::new(false));
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new((0..workers).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let t0 = Instant::now();
        let handles = (0..workers)
            .map(|w| {
                let (make, stop, outcomes, done) = (make.clone(), stop.clone(), outcomes.clone(), done.clone());
                std::thread::spawn(move || {
                    for seq in 0..MAX_REQUESTS {
                        if stop.load(Ordering::SeqCst) || t0.elapsed() > MAX_RUN {
                            break;
                        }
                        let outcome = send(w, seq, make(w, seq), t0);
                        outcomes.lock().unwrap_or_else(|e| e.into_inner()).push(outcome);
                        done[w].fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(pace);
                    }
                })
            })
            .collect();
        Load { stop, outcomes, done, workers: handles }
    }

    /// Requests each worker has finished so far.
    pub fn done(&self) -> Vec<usize> {
        self.done.iter().map(|d| d.load(Ordering::SeqCst)).collect()
    }

    /// Waits (up to `timeout`) until every worker has finished `n` more requests than now.
    pub fn wait_each(&self, n: usize, timeout: Duration) {
        let target: Vec<usize> = self.done().iter().map(|d| d + n).collect();
        crate::wait_for(&format!("every load worker to finish {n} more requests"), timeout, || {
            self.done().iter().zip(&target).all(|(d, t)| d >= t).then_some(())
        });
    }

    /// Every outcome so far, in the order they finished.
    pub fn snapshot(&self) -> Vec<Outcome> {
        self.outcomes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops the workers (each finishes the request it is on) and returns every outcome, in
    /// the order they started.
    pub fn stop(mut self) -> Vec<Outcome> {
        self.halt();
        let mut all = self.snapshot();
        all.sort_by_key(|o| o.started);
        all
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.halt();
    }
}

fn send(worker: usize, seq: u64, shot: Shot, t0: Instant) -> Outcome {
    let started = Instant::now();
    let result = shot.request.try_send(shot.addr).map_err(|e| format!("{:?}: {e}", e.kind()));
    Outcome {
        worker,
        seq,
        tag: shot.tag,
        target: shot.request.target().to_string(),
        started,
        finished: Instant::now(),
        at: started - t0,
        result,
    }
}
