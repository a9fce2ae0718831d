//! Where log lines leave the process. A line at `info` or below (every request's line) goes into
//! a queue that one thread, `log-writer`, writes to stderr in batches: a request pays a copy, not
//! a `write` (7 % of the API threads' time when each line was its own, BENCHMARKS.md section 2).
//! A warning or an error is written at once, after whatever was queued before it, so that the
//! lines that matter most are out before the next instruction (a process that exits after its
//! error line loses nothing).
//!
//! Lines keep their order, whoever writes them. The queue is bounded: a stderr that does not take
//! lines (a full pipe) stops the loggers, as a direct `write` would; no line is dropped. What is
//! queued when the process ends is written by [`flush`] (the server's and the CLI's exits); a
//! `kill -9` loses what was queued, a few milliseconds of request lines at most.

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Bytes queued before a logger waits for the writer (about 4,000 request lines).
const CAP: usize = 1 << 20;

/// How long the writer lets lines gather after the first one wakes it: under load it wakes at
/// most this often (a wake for every line cost more than the `write` it saved), idle never.
const GATHER: Duration = Duration::from_millis(1);

/// How long [`flush`] waits for a writer stuck on a full stderr before it gives up.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

struct Queue {
    pending: Mutex<Pending>,
    /// The writer waits here for lines.
    lines: Condvar,
    /// Loggers wait here for room.
    room: Condvar,
    /// Held by whoever takes a batch out of the queue until it is written: batches leave in the
    /// order they were queued.
    out: Mutex<Vec<u8>>,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    writer_asleep: bool,
    waiting_for_room: usize,
}

static QUEUE: OnceLock<&'static Queue> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn queue() -> Option<&'static Queue> {
    QUEUE.get().copied()
}

/// Starts the writer thread. Until it runs, and if it cannot start, lines are written at once.
pub fn start() {
    if QUEUE.get().is_some() {
        return;
    }
    let queue: &'static Queue = Box::leak(Box::new(Queue::new()));
    if std::thread::Builder::new().name("log-writer".into()).spawn(|| queue.run()).is_ok() {
        let _ = QUEUE.set(queue);
    }
}

/// Queues `line` (one or more whole lines) for the writer thread.
pub fn queue_line(line: &[u8]) {
    match queue() {
        Some(q) => q.push(line),
        None => write_now(line),
    }
}

/// Writes what is queued, then `line`, before returning.
pub fn write_now(line: &[u8]) {
    match queue() {
        Some(q) => q.write_through(Some(line), None),
        None => {
            let _ = std::io::stderr().lock().write_all(line);
        }
    }
}

/// Writes every queued line (waiting at most [`FLUSH_WAIT`] for a stuck stderr).
pub fn flush() {
    if let Some(q) = queue() {
        q.write_through(None, Some(Instant::now() + FLUSH_WAIT));
    }
    let _ = std::io::stderr().flush();
}

impl Queue {
    fn new() -> Self {
        Queue { pending: Mutex::default(), lines: Condvar::new(), room: Condvar::new(), out: Mutex::default() }
    }

    fn push(&self, line: &[u8]) {
        let mut pending = lock(&self.pending);
        while !pending.bytes.is_empty() && pending.bytes.len() + line.len() > CAP {
            pending.waiting_for_room += 1;
            pending = self.room.wait(pending).unwrap_or_else(PoisonError::into_inner);
            pending.waiting_for_room -= 1;
        }
        pending.bytes.extend_from_slice(line);
        let wake = std::mem::take(&mut pending.writer_asleep);
        drop(pending);
        if wake {
            self.lines.notify_one();
        }
    }

    /// Takes what is queued (the caller holds `out`), letting loggers that wait for room go on.
    fn take(&self, into: &mut Vec<u8>) {
        let mut pending = lock(&self.pending);
        std::mem::swap(&mut pending.bytes, into);
        let waiting = pending.waiting_for_room > 0;
        drop(pending);
        if waiting {
            self.room.notify_all();
        }
    }

    /// The writer thread: waits for a line, lets more gather, then writes them in one `write`.
    fn run(&self) {
        loop {
            {
                let mut pending = lock(&self.pending);
                while pending.bytes.is_empty() {
                    pending.writer_asleep = true;
                    pending = self.lines.wait(pending).unwrap_or_else(PoisonError::into_inner);
                }
            }
            std::thread::sleep(GATHER);
            // `out` and the queue's buffer trade places each batch: both keep their capacity.
            let mut out = lock(&self.out);
            out.clear();
            self.take(&mut out);
            let _ = std::io::stderr().lock().write_all(&out);
        }
    }

    /// Writes the queue, then `line`, on this thread. With a `deadline`, gives up when the
    /// writer does not let go of `out` by then (it is stuck on a full stderr).
    fn write_through(&self, line: Option<&[u8]>, deadline: Option<Instant>) {
        let mut out = match deadline {
            None => lock(&self.out),
            Some(deadline) => loop {
                match self.out.try_lock() {
                    Ok(out) => break out,
                    Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(std::sync::TryLockError::WouldBlock) => return,
                }
            },
        };
        out.clear();
        self.take(&mut out);
        out.extend_from_slice(line.unwrap_or_default());
        let _ = std::io::stderr().lock().write_all(&out);
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue of its own (no thread): what `push` and `take` keep.
    fn queue() -> Queue {
        Queue::new()
    }

    #[test]
    fn lines_leave_in_the_order_they_came() {
        let q = queue();
        q.push(b"one\n");
        q.push(b"two\n");
        let mut out = Vec::new();
        q.take(&mut out);
        assert_eq!(out, b"one\ntwo\n");
        q.push(b"three\n");
        out.clear();
        q.take(&mut out);
        assert_eq!(out, b"three\n");
    }

    #[test]
    fn a_full_queue_makes_loggers_wait_and_loses_nothing() {
        let q = std::sync::Arc::new(queue());
        let line = vec![b'x'; CAP / 4];
        let loggers: Vec<_> = (0..8)
            .map(|_| {
                let (q, line) = (std::sync::Arc::clone(&q), line.clone());
                std::thread::spawn(move || q.push(&line))
            })
            .collect();
        let mut taken = 0;
        let mut out = Vec::new();
        while taken < 8 * line.len() {
            out.clear();
            q.take(&mut out);
            assert!(out.len() <= CAP, "the queue held {} bytes", out.len());
            taken += out.len();
            std::thread::yield_now();
        }
        for l in loggers {
            l.join().expect("a logger finished");
        }
        assert_eq!(taken, 8 * line.len());
    }
}
