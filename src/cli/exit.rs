//! Exit statuses: the one place that turns a command's outcome into a
//! number (documented in README.md and docs/boot.md, asserted by
//! tests/cli.rs).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Healthy: every selected GPU present, every memory BAR assigned; or a
    /// command that did what it was asked.
    Ok,
    /// A problem was found (the report says which), or `remediate` needs a
    /// person (the fix is on the host, or a boot loader we do not edit).
    Problem,
    /// Usage or configuration error.
    Usage,
    /// Nothing could be inspected: no sysfs under the root, an unreadable
    /// input file, no PCI evidence in `explain`'s input.
    CannotInspect,
    /// `remediate` or `publish` could not write a file or run a boot loader
    /// tool. The same number as `CannotInspect`: a script that watches for
    /// "the tool could not do its job" needs one code.
    CannotApply,
    /// `boot` in strict mode after a failed check: the hook stops the boot.
    /// Distinct from every other code, so a crash or a usage error can
    /// never be mistaken for it.
    StopBoot,
}

impl Exit {
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Problem => 1,
            Exit::Usage => 2,
            Exit::CannotInspect | Exit::CannotApply => 3,
            Exit::StopBoot => 4,
        }
    }
}

/// Every status with its meaning, for the manual page (EXIT STATUS).
pub(crate) const MEANINGS: [(u8, &str); 5] = [
    (0, "Healthy: every selected GPU present, every memory BAR assigned; or the command did what it was asked."),
    (1, "A problem was found (the report says which and why), or remediate needs a person (the fix is on the host, or a boot loader it does not edit)."),
    (2, "Usage or configuration error."),
    (3, "Nothing could be inspected (no sysfs under the root, an unreadable input file, no PCI evidence in explain's input); for remediate and publish, a file could not be written or the boot loader tool failed."),
    (4, "boot only: strict mode and the check failed; the hook stops the boot."),
];

#[cfg(test)]
mod tests {
    use super::{Exit, MEANINGS};

    #[test]
    fn the_manual_lists_every_status_once() {
        let all = [
            Exit::Ok,
            Exit::Problem,
            Exit::Usage,
            Exit::CannotInspect,
            Exit::CannotApply,
            Exit::StopBoot,
        ];
        let mut codes: Vec<u8> = all.iter().map(|e| e.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        let listed: Vec<u8> = MEANINGS.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, listed);
    }
}
