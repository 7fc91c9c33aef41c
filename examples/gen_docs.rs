//! Writes the manual pages and the shell completions from the clap
//! definitions in `src/cli/args.rs`, so that the command line has one
//! source:
//!
//! ```text
//! cargo run --example gen_docs -- OUT_DIR
//! ```
//!
//! writes `OUT_DIR/man/gpu-preflight.8` and one `gpu-preflight-COMMAND.8`
//! per subcommand, and `OUT_DIR/completions/{gpu-preflight.bash,
//! _gpu-preflight, gpu-preflight.fish}`. `make install` runs it.
//!
//! An example rather than a subcommand or a second `[[bin]]`, like
//! `gen_tree`: clap_mangen and clap_complete stay dev-dependencies and the
//! boot binary that goes into every initramfs does not grow.

use clap::Command;
use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const SECTION: &str = "8";
const MANUAL: &str = "System Administration";

const FILES: [(&str, &str); 6] = [
    (
        "/etc/gpu-preflight.conf",
        "The configuration: strict mode, the GPU selection, the textfile directory, remediate=1.",
    ),
    (
        "/run/gpu-preflight/report.json",
        "The boot check's report, written from the initramfs.",
    ),
    (
        "/run/gpu-preflight/metrics.prom",
        "The same report for node_exporter; publish copies it to the textfile directory.",
    ),
    (
        "/var/lib/gpu-preflight/",
        "What remediate changed, so that it changes it once and undo takes back only that.",
    ),
    (
        "/etc/default/grub.d/99-gpu-preflight.cfg",
        "The GRUB fragment remediate writes on Debian and Ubuntu.",
    ),
    (
        "/usr/share/gpu-preflight/",
        "Alerting rules, the node-problem-detector plugin and the host-side VM hook.",
    ),
];

/// The page's file name and text.
fn page(cmd: &Command, top: bool) -> Result<(String, Vec<u8>), std::io::Error> {
    let man = Man::new(cmd.clone())
        .section(SECTION)
        .manual(MANUAL)
        .source(format!("gpu-preflight {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in gpu_preflight::manual::exit_statuses() {
        roff.control("TP", []);
        roff.text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
    if top {
        roff.control("SH", ["FILES"]);
        for (path, what) in FILES {
            roff.control("TP", []);
            roff.text([bold(path)]);
            roff.text([roman(what)]);
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut see: Vec<String> = if top {
        cmd.get_subcommands()
            .map(|s| {
                format!(
                    "{}({SECTION})",
                    s.get_display_name().unwrap_or(s.get_name())
                )
            })
            .collect()
    } else {
        vec![format!("gpu-preflight({SECTION})")]
    };
    see.extend(["dracut(8)", "update-initramfs(8)", "grubby(8)"].map(String::from));
    roff.text([roman(see.join(", "))]);
    roff.to_writer(&mut out)?;
    Ok((man.get_filename(), out))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn generate(out: &Path) -> Result<(), String> {
    let man_dir = out.join("man");
    let comp_dir = out.join("completions");
    for d in [&man_dir, &comp_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    // Built, so that what clap adds at parse time (--help, --version, the
    // global -v on every subcommand, the pages' gpu-preflight-COMMAND
    // names) is in the pages too; `help COMMAND` is not a page.
    let mut cmd = gpu_preflight::manual::command().disable_help_subcommand(true);
    cmd.build();
    let name = cmd.get_name().to_string();
    let mut pages = vec![page(&cmd, true)];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push(page(sub, false));
    }
    for p in pages {
        let (file, bytes) = p.map_err(|e| e.to_string())?;
        write(&man_dir.join(file), &bytes)?;
    }
    for (shell, file) in [
        (Shell::Bash, format!("{name}.bash")),
        (Shell::Zsh, format!("_{name}")),
        (Shell::Fish, format!("{name}.fish")),
    ] {
        let mut bytes = Vec::new();
        clap_complete::generate(shell, &mut cmd, &name, &mut bytes);
        if shell == Shell::Bash {
            bytes = bash_hyphen_fix(&name, &bytes)?;
        }
        write(&comp_dir.join(file), &bytes)?;
    }
    Ok(())
}

/// clap_complete's bash script spells a subcommand's state
/// `gpu__preflight__subcmd__check` where it sets it and
/// `gpu__subcmd__preflight__subcmd__check` where it matches it, for any
/// binary name with a hyphen (clap-rs/clap#6421, open in clap_complete
/// 4.6.12): no subcommand's option would ever complete. Respelled as set;
/// tests/shell/packages completes `remediate --un` in bash to hold it.
fn bash_hyphen_fix(name: &str, script: &[u8]) -> Result<Vec<u8>, String> {
    let text = String::from_utf8(script.to_vec()).map_err(|e| e.to_string())?;
    let wrong = format!("{}__subcmd__", name.replace('-', "__subcmd__"));
    let right = format!("{}__subcmd__", name.replace('-', "__"));
    Ok(text.replace(&wrong, &right).into_bytes())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = args.as_slice() else {
        eprintln!("usage: gen_docs OUT_DIR");
        return ExitCode::from(2);
    };
    match generate(&PathBuf::from(out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_docs: {e}");
            ExitCode::from(1)
        }
    }
}
