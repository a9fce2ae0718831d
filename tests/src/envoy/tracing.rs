//! The traces settings the shipped configurations carry commented.

/// `text` with each `# >>> tracing` ... `# <<< tracing` block uncommented (the traces settings
/// the shipped recipes carry commented; scripts/render-envoy.py --tracing does the same to the
/// Envoy templates).
pub fn enable_tracing(text: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("# >>> tracing") {
            inside = true;
        } else if trimmed.starts_with("# <<< tracing") {
            inside = false;
        } else if inside && let Some(rest) = trimmed.strip_prefix("# ") {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str(rest);
            continue;
        }
        out.push_str(line);
    }
    out
}
