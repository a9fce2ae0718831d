//! The units this process holds from leases and has not spent, per key, in a file of its own
//! (`<state file>-leases/<pid>.journal`, SQLite only): written before each answer, so that
//! after `kill -9` the next process gives back exactly what the dead one held and had not
//! answered (its count stays 200s + the request in flight, as without leases). A write is one
//! `pwrite` of a 64-byte slot into the page cache (no `fsync`): the kernel keeps it when the
//! process dies; a machine that loses power loses what was not written out, and those units
//! stay counted for their day (refused early, never over).
//!
//! Safe by order: a slot is raised only after the store granted, lowered before an answer, and
//! zeroed before a give-back is sent, so it never says more than the process holds unspent. A
//! write that fails removes the file and stops the journal (a crash then keeps the units counted).
//! Each process locks its file; a file no process locks belongs to a dead one.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::state::GiveBack;

/// A slot: units (u64, little-endian), the UTC day (10 bytes), the key id's length, the key id.
const SLOT: usize = 64;
const KEY_AT: usize = 19;
const KEY_MAX: usize = SLOT - KEY_AT;
/// The most keys journaled at once (a 4 MiB file at most); a key beyond leases one request at
/// a time.
pub const MAX_SLOTS: usize = 65_536;

pub struct Journal {
    file: File,
    path: PathBuf,
    slots: Mutex<Slots>,
    broken: AtomicBool,
}

#[derive(Default)]
struct Slots {
    by_key: HashMap<String, usize>,
    free: Vec<usize>,
    next: usize,
}

impl Journal {
    /// Opens this process's journal in `dir` (made if missing), and reads and removes those of
    /// processes that are gone: what each held, to give back.
    pub fn open(dir: &Path) -> std::io::Result<(Journal, Vec<(String, GiveBack)>)> {
        std::fs::create_dir_all(dir)?;
        let owed = settle_dead(dir)?;
        let path = dir.join(format!("{}.journal", std::process::id()));
        // Locked before it is emptied: never another live process's file.
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
        file.try_lock().map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
        file.set_len(0)?;
        Ok((Journal { file, path, slots: Mutex::default(), broken: AtomicBool::new(false) }, owed))
    }

    /// Whether the journal is on (a failed write turns it off for good).
    pub fn on(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    /// Whether `key_id` can be journaled (a slot is free or already its own).
    pub fn covers(&self, key_id: &str) -> bool {
        if self.broken.load(Ordering::Relaxed) || key_id.len() > KEY_MAX {
            return false;
        }
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.by_key.contains_key(key_id) || !slots.free.is_empty() || slots.next < MAX_SLOTS
    }

    /// Records that this process holds `units` of `key_id` on `day`, unspent. False when it
    /// could not (the caller must then hold nothing it has not answered).
    pub fn write(&self, key_id: &str, day: &str, units: u64) -> bool {
        if self.broken.load(Ordering::Relaxed) || key_id.len() > KEY_MAX || day.len() != 10 {
            return false;
        }
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = match slots.by_key.get(key_id) {
            Some(&slot) => slot,
            None if units == 0 => return true,
            None => {
                let slot = match slots.free.pop() {
                    Some(slot) => slot,
                    None if slots.next < MAX_SLOTS => {
                        slots.next += 1;
                        slots.next - 1
                    }
                    None => return false,
                };
                // A key's name is copied once, when it takes a slot (a write per answer follows).
                slots.by_key.insert(key_id.to_owned(), slot);
                slot
            }
        };
        if units == 0 {
            // Zeroed and free again: the slot's key is rewritten by its next owner.
            slots.by_key.remove(key_id);
            slots.free.push(slot);
        }
        let mut bytes = [0u8; SLOT];
        bytes[..8].copy_from_slice(&units.to_le_bytes());
        bytes[8..18].copy_from_slice(day.as_bytes());
        bytes[18] = key_id.len() as u8;
        bytes[KEY_AT..KEY_AT + key_id.len()].copy_from_slice(key_id.as_bytes());
        if let Err(e) = self.file.write_at(&bytes, (slot * SLOT) as u64) {
            self.break_off(&e);
            return false;
        }
        true
    }

    /// After a write failed, the file may say more than this process holds: it goes.
    fn break_off(&self, e: &std::io::Error) {
        if !self.broken.swap(true, Ordering::Relaxed) {
            let _ = std::fs::remove_file(&self.path);
            tracing::error!(error = %e, "lease journal write failed: journal off (after a crash, held units stay counted)");
        }
    }
}

/// Every journal in `dir` no process holds: its held units as give-backs, the file removed
/// first (a crash after that keeps the units counted; never twice given back).
fn settle_dead(dir: &Path) -> std::io::Result<Vec<(String, GiveBack)>> {
    let mut owed = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "journal") {
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else { continue };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => continue, // a live process's (an upgrade's old one)
            Err(TryLockError::Error(e)) => return Err(e),
        }
        let bytes = std::fs::read(&path)?;
        std::fs::remove_file(&path)?;
        owed.extend(bytes.chunks_exact(SLOT).filter_map(held));
    }
    Ok(owed)
}

/// A slot's key and what it held, if anything.
fn held(slot: &[u8]) -> Option<(String, GiveBack)> {
    let units = u64::from_le_bytes(slot[..8].try_into().ok()?);
    let len = usize::from(slot[18]);
    if units == 0 || len > KEY_MAX {
        return None;
    }
    let day = std::str::from_utf8(&slot[8..18]).ok()?.to_owned();
    let key = std::str::from_utf8(&slot[KEY_AT..KEY_AT + len]).ok()?.to_owned();
    Some((key, GiveBack { day, units, ..GiveBack::default() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_s_units_are_read_back_once_and_a_live_one_s_left_alone() {
        let dir = std::env::temp_dir().join(format!("ev-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (first, owed) = Journal::open(&dir).unwrap();
        assert!(owed.is_empty());
        assert!(first.write("key-a", "2026-11-29", 7));
        assert!(first.write("key-b", "2026-11-29", 3));
        assert!(first.write("key-b", "2026-11-29", 0), "spent: zeroed");
        assert!(first.write("key-c", "2026-11-29", 5), "takes b's slot");
        assert!(!first.write(&"k".repeat(KEY_MAX + 1), "2026-11-29", 1), "a key too long is not journaled");
        // The same process id's file is ours: a second journal in the same process is another
        // "process" only through a renamed file.
        std::fs::rename(&first.path, dir.join("1.journal")).unwrap();
        drop(first); // its lock goes with it: "dead"
        let (second, mut owed) = Journal::open(&dir).unwrap();
        owed.sort_by(|a, b| a.0.cmp(&b.0));
        let owed: Vec<(&str, &str, u64)> = owed.iter().map(|(k, b)| (k.as_str(), b.day.as_str(), b.units)).collect();
        assert_eq!(owed, [("key-a", "2026-11-29", 7), ("key-c", "2026-11-29", 5)]);
        assert!(!dir.join("1.journal").exists(), "read once");
        // A journal still locked (a live process's) is not touched.
        assert!(second.write("key-d", "2026-11-29", 2));
        std::fs::copy(&second.path, dir.join("2.journal")).unwrap();
        let live = File::open(dir.join("2.journal")).unwrap();
        live.try_lock().unwrap();
        assert!(settle_dead(&dir).unwrap().is_empty(), "ours and the live one's");
        assert!(dir.join("2.journal").exists() && second.path.exists());
        drop((live, second));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_turns_the_journal_off_and_removes_its_file() {
        // In the build tree, not /tmp; removed at the end all the same.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-state/journal-off");
        let _ = std::fs::remove_dir_all(&dir);
        let (journal, _) = Journal::open(&dir).unwrap();
        assert!(journal.on() && journal.write("key-a", "2026-11-29", 7));
        // The same file, opened read-only: every write fails.
        let file = File::open(&journal.path).unwrap();
        let failing =
            Journal { file, path: journal.path.clone(), slots: Mutex::default(), broken: AtomicBool::new(false) };
        assert!(!failing.write("key-a", "2026-11-29", 6));
        assert!(!failing.on() && !failing.covers("key-a"), "off for good");
        assert!(!failing.path.exists(), "it may say more than is held: gone");
        drop((journal, failing));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
