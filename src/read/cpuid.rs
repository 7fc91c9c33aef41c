//! CPUID, read in-process, behind a small trait so tests can say what a
//! CPU answers. Leaf 1 ECX bit 31 says a hypervisor is present; leaf
//! 0x40000000 EBX, ECX, EDX hold its signature (`KVMKVMKVM\0\0\0` for KVM,
//! Linux `arch/x86/include/uapi/asm/kvm_para.h`). QEMU's `kvm=off`
//! (Proxmox `cpu: ...,hidden=1`, libvirt `<kvm><hidden state='on'/>`)
//! hides that leaf; the hypervisor bit stays. What it says is a
//! `model::platform::CpuidView`.

use crate::model::platform::CpuidView;

pub(crate) trait Cpuid {
    /// EAX, EBX, ECX, EDX of `leaf` (subleaf 0).
    fn leaf(&self, leaf: u32) -> [u32; 4];
}

/// This CPU.
pub(crate) struct LiveCpuid;

impl Cpuid for LiveCpuid {
    #[cfg(target_arch = "x86_64")]
    fn leaf(&self, leaf: u32) -> [u32; 4] {
        // CPUID exists on every x86_64 CPU and has no side effects.
        #[allow(unused_unsafe)]
        let r = unsafe { core::arch::x86_64::__cpuid(leaf) };
        [r.eax, r.ebx, r.ecx, r.edx]
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn leaf(&self, _leaf: u32) -> [u32; 4] {
        [0; 4]
    }
}

pub(crate) fn view(c: &dyn Cpuid) -> CpuidView {
    if !cfg!(target_arch = "x86_64") {
        return CpuidView::NotRead;
    }
    if c.leaf(1)[2] & (1 << 31) == 0 {
        return CpuidView::NoHypervisor;
    }
    let [_, b, c2, d] = c.leaf(0x4000_0000);
    let bytes: Vec<u8> = [b, c2, d].iter().flat_map(|r| r.to_le_bytes()).collect();
    let signature: String = bytes
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| {
            if b.is_ascii_graphic() {
                *b as char
            } else {
                '?'
            }
        })
        .collect();
    CpuidView::Hypervisor { signature }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(bool, &'static [u8; 12]);
    impl Cpuid for Fake {
        fn leaf(&self, leaf: u32) -> [u32; 4] {
            let w = |i: usize| u32::from_le_bytes(self.1[i..i + 4].try_into().unwrap());
            match leaf {
                1 => [0, 0, if self.0 { 1 << 31 } else { 0 }, 0],
                0x4000_0000 => [0x4000_0001, w(0), w(4), w(8)],
                _ => [0; 4],
            }
        }
    }

    #[test]
    fn kvm_hidden_and_bare_metal_are_told_apart() {
        assert_eq!(
            view(&Fake(true, b"KVMKVMKVM\0\0\0")),
            CpuidView::Hypervisor {
                signature: "KVMKVMKVM".into()
            }
        );
        assert_eq!(
            view(&Fake(true, &[0; 12])),
            CpuidView::Hypervisor {
                signature: String::new()
            }
        );
        assert_eq!(
            view(&Fake(false, b"KVMKVMKVM\0\0\0")),
            CpuidView::NoHypervisor
        );
    }

    #[test]
    fn the_live_cpu_answers_without_fault() {
        // Whatever this machine is, reading it must not fault.
        let _ = view(&LiveCpuid);
    }
}
