//! The guest's own settings: the Linux kernel command line, through the
//! distributions' boot loader tools (or `gpu-preflight remediate`, which
//! adds `pci=realloc` and nothing else), and NCCL's environment.

use crate::decide::hint::Change;

/// How to add a change's kernel parameters, after a sentence that names
/// them (`it`); `None` when it adds none.
pub(crate) fn kernel_cmdline(c: &Change) -> Option<String> {
    let params = &c.kernel_cmdline_add;
    if params.is_empty() {
        return None;
    }
    let args = params.join(" ");
    let args = if params.len() > 1 {
        format!("\"{args}\"")
    } else {
        args
    };
    let remediate = if params.len() == 1 && params[0] == "pci=realloc" {
        "; or let `gpu-preflight remediate` do it once"
    } else {
        ""
    };
    Some(format!(
        "Debian/Ubuntu: append it to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and run `update-grub`; Fedora/RHEL: `grubby --update-kernel=ALL --args={args}`{remediate}"
    ))
}

/// `pci=realloc,hpmmioprefsize=32G,hpmemsize=64M`: the kernel's
/// reservation for each hot-plug bridge, prefetchable and not
/// (Documentation/admin-guide/kernel-parameters.txt, `pci=`), with the
/// re-placement that makes room for it.
pub(crate) fn hotplug_reserve(pref: u64, mem: u64) -> String {
    format!(
        "pci=realloc,hpmmioprefsize={},hpmemsize={}",
        super::qemu::size_param(pref),
        super::qemu::size_param(mem)
    )
}

/// `NCCL_P2P_LEVEL=PHB`: the settings a change gives NCCL a value, as
/// they are written in /etc/nccl.conf or the environment.
pub(crate) fn nccl_env(c: &Change) -> String {
    c.nccl_env
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
