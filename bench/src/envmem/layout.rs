//! A Wasm module's static memory layout, read from its sections: what every VM's linear memory
//! holds before the module runs a line (the stack's reservation, the data segments, the initial
//! size). Only the few sections that say so are decoded.

/// The static layout of one module; sizes in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// The memory's initial size, in 64 KiB pages.
    pub initial_pages: u64,
    /// The data segments: how many, their bytes, and the highest address they fill.
    pub segments: usize,
    pub data_bytes: u64,
    pub data_end: u64,
    /// The first global's initial value: the stack pointer of a Rust module (the stack grows down
    /// from it; with `--stack-first`, the default, the stack's size).
    pub stack_pointer: Option<u64>,
    /// The exported `__heap_base`, where the allocator's heap starts, when exported.
    pub heap_base: Option<u64>,
}

impl Layout {
    pub fn read(path: &std::path::Path) -> anyhow::Result<Layout> {
        let bytes = std::fs::read(path)?;
        Layout::parse(&bytes).ok_or_else(|| anyhow::anyhow!("{} is no Wasm module this reader follows", path.display()))
    }

    pub fn parse(wasm: &[u8]) -> Option<Layout> {
        let mut r = Reader { bytes: wasm.strip_prefix(b"\0asm\x01\0\0\0")?, at: 0 };
        let mut layout = Layout::default();
        let mut globals: Vec<Option<u64>> = Vec::new();
        let mut heap_base_global = None;
        while r.at < r.bytes.len() {
            let id = r.byte()?;
            let size = usize::try_from(r.leb()?).ok()?;
            let mut s = Reader { bytes: r.bytes.get(r.at..r.at.checked_add(size)?)?, at: 0 };
            r.at += size;
            match id {
                // Memory: the first memory's limits.
                5 if s.leb()? > 0 => {
                    s.byte()?;
                    layout.initial_pages = s.leb()?;
                }
                // Globals: type, mutability, then a constant expression.
                6 => {
                    for _ in 0..s.leb()? {
                        s.byte()?;
                        s.byte()?;
                        globals.push(s.const_expr()?);
                    }
                }
                // Exports: name, kind (3: a global), index.
                7 => {
                    for _ in 0..s.leb()? {
                        let len = usize::try_from(s.leb()?).ok()?;
                        let name = s.take(len)?;
                        let (kind, index) = (s.byte()?, s.leb()?);
                        if kind == 3 && name == b"__heap_base" {
                            heap_base_global = Some(index);
                        }
                    }
                }
                // Data: flags (0 active in memory 0, 1 passive, 2 active in a given memory).
                11 => {
                    for _ in 0..s.leb()? {
                        let flags = s.leb()?;
                        if flags == 2 {
                            s.leb()?;
                        }
                        let offset = if flags == 1 { None } else { s.const_expr()? };
                        let len = s.leb()?;
                        s.take(usize::try_from(len).ok()?)?;
                        layout.segments += 1;
                        layout.data_bytes += len;
                        layout.data_end = layout.data_end.max(offset.unwrap_or(0) + len);
                    }
                }
                _ => {}
            }
        }
        layout.stack_pointer = globals.first().copied().flatten();
        layout.heap_base = heap_base_global.and_then(|i| globals.get(usize::try_from(i).ok()?).copied().flatten());
        Some(layout)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    /// An unsigned LEB128 number (up to 64 bits).
    fn leb(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// A constant expression ending in `end` (0x0b): the value of an `i32.const` (its signed
    /// LEB128 read as unsigned: addresses here are below 2 GiB), else `None`.
    fn const_expr(&mut self) -> Option<Option<u64>> {
        let op = self.byte()?;
        let value = match op {
            0x41 | 0x42 => Some(self.leb()?),
            // global.get, ref.null, ref.func: one immediate; no address.
            0x23 | 0xd0 | 0xd2 => {
                self.leb()?;
                None
            }
            0x43 => self.take(4).map(|_| None)?,
            0x44 => self.take(8).map(|_| None)?,
            _ => return None,
        };
        (self.byte()? == 0x0b).then_some(value)
    }
}

/// The layout as a table row: `| name | bytes | pages | stack | data |`.
pub fn row(name: &str, file_bytes: u64, l: &Layout) -> String {
    let kib = |b: u64| format!("{:.0}", b as f64 / 1024.0);
    format!(
        "| {name} | {file_bytes} | {} ({} KiB) | {} | {} in {} segment{} (up to {} KiB) |",
        l.initial_pages,
        l.initial_pages * 64,
        l.stack_pointer.map_or("?".into(), |s| format!("{} KiB", kib(s))),
        crate::report::count(l.data_bytes as f64),
        l.segments,
        if l.segments == 1 { "" } else { "s" },
        kib(l.data_end),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_made_module_is_read() {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        // Memory: one, no maximum, 17 pages.
        m.extend([5, 3, 1, 0, 17]);
        // Globals: i32 mut = 1048576 (0x80 0x80 0xc0 0x00), i32 const = 1100000.
        let mut g = vec![2, 0x7f, 1, 0x41, 0x80, 0x80, 0xc0, 0x00, 0x0b, 0x7f, 0, 0x41];
        g.extend([0xe0, 0x91, 0xc3, 0x00, 0x0b]);
        m.push(6);
        m.push(g.len() as u8);
        m.extend(&g);
        // Exports: "__heap_base", a global, index 1.
        let mut e = vec![1, 11];
        e.extend(b"__heap_base");
        e.extend([3, 1]);
        m.push(7);
        m.push(e.len() as u8);
        m.extend(&e);
        // Data: one active segment at 1048576, 3 bytes.
        let d = [1, 0, 0x41, 0x80, 0x80, 0xc0, 0x00, 0x0b, 3, b'a', b'b', b'c'];
        m.push(11);
        m.push(d.len() as u8);
        m.extend(d);
        let l = Layout::parse(&m).unwrap();
        assert_eq!(l.initial_pages, 17);
        assert_eq!((l.segments, l.data_bytes, l.data_end), (1, 3, 1_048_579));
        assert_eq!((l.stack_pointer, l.heap_base), (Some(1_048_576), Some(1_100_000)));
        assert_eq!(Layout::parse(b"not wasm"), None);
        // Cut short anywhere: no panic, no layout.
        for n in 8..m.len() {
            let _ = Layout::parse(&m[..n]);
        }
    }
}
