//! The screen the text report goes to: the terminal's width when stdout is
//! one (80 columns otherwise: a pipe, a file, the journal), and whether
//! the locale says UTF-8.
//!
//! One ioctl(2) through libc, which the binary links already, rather than
//! a crate for it.

use crate::report::wrap::{locale_is_utf8, Screen};

/// The terminal's columns on stdout, `None` when stdout is no terminal or
/// does not say.
fn terminal_width() -> Option<usize> {
    // SAFETY: isatty and TIOCGWINSZ only read the descriptor's state into
    // a winsize we own.
    unsafe {
        if libc::isatty(libc::STDOUT_FILENO) != 1 {
            return None;
        }
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) != 0 || ws.ws_col == 0 {
            return None;
        }
        Some(usize::from(ws.ws_col))
    }
}

pub(super) fn screen() -> Screen {
    let var = |k: &str| std::env::var(k).ok();
    Screen::new(
        terminal_width(),
        locale_is_utf8(
            var("LC_ALL").as_deref(),
            var("LC_CTYPE").as_deref(),
            var("LANG").as_deref(),
        ),
    )
}
