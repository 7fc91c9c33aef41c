//! Kernel command line: tokenising as the kernel does, `pci=realloc`
//! detection, and our own `gpu_preflight.*` keys.

/// Splits a command line into `(key, value)` parameters the way the kernel's
/// `next_arg` does: whitespace separates, double quotes group, a value is what
/// follows the first `=`. Everything after a bare `--` belongs to init and is
/// not returned.
pub fn parameters(_cmdline: &str) -> Vec<(String, Option<String>)> {
    Vec::new()
}

/// Whether the command line asks for PCI resource reallocation. The last
/// `realloc` / `realloc=on` / `realloc=off` inside any `pci=` list wins.
pub fn realloc_active(_cmdline: &str) -> bool {
    false
}
