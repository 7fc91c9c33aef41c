//! The standard capability list of a PCI function's config space, and in
//! it QEMU's GPUDirect clique capability.
//!
//! QEMU (hw/vfio/pci-quirks.c, `vfio_add_nv_gpudirect_cap`, since 2.11;
//! the 0xD4 fallback since 8.1, "Support alternate offset for GPUDirect
//! Cliques", 2023-06) adds to an NVIDIA display-class device given
//! `x-nv-gpudirect-clique=N` a vendor-specific capability (id 0x09) of 8
//! bytes at 0xC8, or at 0xD4 when 0xC8 is taken: id, next, length 8, the
//! bytes `P2P`, then `clique << 3 | version` (version 0), then 0.

use crate::model::p2p::CliqueCap;

/// `PCI_CAP_ID_VNDR`.
pub(crate) const CAP_ID_VENDOR: u8 = 0x09;
const STATUS: usize = 0x06;
const STATUS_CAP_LIST: u8 = 0x10;
const CAP_POINTER: usize = 0x34;
/// The standard list lives in the first 256 bytes; 48 entries of 4 bytes
/// at least fit above the header, so a longer walk is a loop.
const MAX_CAPS: usize = 48;

/// One capability: where it starts and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capability {
    pub offset: u8,
    pub id: u8,
}

/// Walks the standard list as the kernel does (`pci_find_capability`:
/// pointers masked to dword alignment, below 0x40 ends it, a bounded
/// number of steps). `None` when the list runs past what was read.
pub(crate) fn capabilities(config: &[u8]) -> Option<Vec<Capability>> {
    let status = *config.get(STATUS)?;
    if status & STATUS_CAP_LIST == 0 {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    let mut pos = *config.get(CAP_POINTER)? & 0xfc;
    while pos >= 0x40 && out.len() < MAX_CAPS {
        let id = *config.get(usize::from(pos))?;
        let next = *config.get(usize::from(pos) + 1)?;
        if id == 0xff {
            break;
        }
        out.push(Capability { offset: pos, id });
        pos = next & 0xfc;
    }
    Some(out)
}

/// The clique capability, if the function carries one: a vendor
/// capability of length 8 whose bytes 3-5 are `P2P` (what NVIDIA's driver
/// looks for; AMD's look-alike says `AP2` and is not this one).
pub(crate) fn clique_cap(config: &[u8]) -> CliqueCap {
    let caps = match capabilities(config) {
        Some(c) => c,
        None => {
            return CliqueCap::Unreadable {
                bytes: config.len(),
            }
        }
    };
    for c in caps.iter().filter(|c| c.id == CAP_ID_VENDOR) {
        let at = usize::from(c.offset);
        let Some(body) = config.get(at..at + 8) else {
            return CliqueCap::Unreadable {
                bytes: config.len(),
            };
        };
        if body[2] == 8 && &body[3..6] == b"P2P" {
            return CliqueCap::Found {
                offset: c.offset,
                clique: body[6] >> 3,
                version: body[6] & 0x7,
            };
        }
    }
    // A capability list read to its end within 64 bytes is rare but
    // complete; a 64-byte read that ended early is caught above.
    CliqueCap::Absent
}

/// Where QEMU 8.1 and later would put the capability for a device with
/// this config space (a capability starting within 0xC8..0xD0 takes 0xC8,
/// within 0xD4..0xDC takes 0xD4), and whether QEMU before 8.1, which
/// knows only 0xC8, could place it at all. `None` when the list cannot be
/// read.
pub(crate) fn clique_placement(config: &[u8]) -> Option<Placement> {
    let caps = capabilities(config)?;
    let taken = |lo: u8, hi: u8| caps.iter().any(|c| c.offset >= lo && c.offset < hi);
    let c8 = taken(0xc8, 0xd0);
    let d4 = taken(0xd4, 0xdc);
    Some(Placement {
        offset: match (c8, d4) {
            (false, _) => Some(0xc8),
            (true, false) => Some(0xd4),
            (true, true) => None,
        },
        c8_free: !c8,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Where QEMU 8.1+ places it; `None`: QEMU refuses to start
    /// ("invalid config space").
    pub offset: Option<u8>,
    /// QEMU before 8.1 places it only when 0xC8 is free.
    pub c8_free: bool,
}

/// Writes a clique capability into `config` at `at` and links it at the
/// end of the list, as QEMU does: for tests and fixtures only.
#[cfg(test)]
pub(crate) fn with_clique(config: &[u8], at: u8, clique: u8) -> Vec<u8> {
    let mut c = config.to_vec();
    if c.len() < 256 {
        c.resize(256, 0);
    }
    let caps = capabilities(&c).unwrap_or_default();
    match caps.last() {
        Some(last) => c[usize::from(last.offset) + 1] = at,
        None => {
            c[STATUS] |= STATUS_CAP_LIST;
            c[CAP_POINTER] = at;
        }
    }
    let a = usize::from(at);
    c[a..a + 8].copy_from_slice(&[CAP_ID_VENDOR, 0, 8, b'P', b'2', b'P', clique << 3, 0]);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The captured H200 guest's config space (tests/fixtures/
    /// h200-kvm-passthrough): PM 0x40, MSI 0x48, PCIe 0x60, MSI-X 0xb0.
    fn h200() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/h200-kvm-passthrough/root/sys/devices/pci0000:00/0000:00:06.0/config"
        ))
        .unwrap()
    }

    #[test]
    fn the_real_h200_lists_its_four_capabilities_and_no_clique() {
        let c = h200();
        let ids: Vec<(u8, u8)> = capabilities(&c)
            .unwrap()
            .iter()
            .map(|c| (c.offset, c.id))
            .collect();
        assert_eq!(
            ids,
            [(0x40, 0x01), (0x48, 0x05), (0x60, 0x10), (0xb0, 0x11)]
        );
        assert_eq!(clique_cap(&c), CliqueCap::Absent);
        assert_eq!(
            clique_placement(&c),
            Some(Placement {
                offset: Some(0xc8),
                c8_free: true
            })
        );
    }

    #[test]
    fn a_clique_at_either_offset_is_read_with_its_id() {
        for at in [0xc8, 0xd4] {
            for clique in [0, 7, 15] {
                let c = with_clique(&h200(), at, clique);
                assert_eq!(
                    clique_cap(&c),
                    CliqueCap::Found {
                        offset: at,
                        clique,
                        version: 0
                    },
                    "at {at:#x} clique {clique}"
                );
            }
        }
    }

    #[test]
    fn sixty_four_bytes_cannot_tell() {
        let c = with_clique(&h200(), 0xc8, 3);
        assert_eq!(clique_cap(&c[..64]), CliqueCap::Unreadable { bytes: 64 });
    }

    #[test]
    fn a_taken_c8_moves_the_capability_to_d4_and_both_taken_is_a_refusal() {
        let mut c = h200();
        // MSI-X at 0xc8, as Turing and later have it.
        c[0x61] = 0xc8;
        c[0xc8] = 0x11;
        c[0xc9] = 0x00;
        assert_eq!(
            clique_placement(&c),
            Some(Placement {
                offset: Some(0xd4),
                c8_free: false
            })
        );
        c[0xc9] = 0xd4;
        c[0xd4] = 0x09;
        assert_eq!(
            clique_placement(&c),
            Some(Placement {
                offset: None,
                c8_free: false
            })
        );
    }

    #[test]
    fn amds_look_alike_and_a_wrong_length_are_not_the_clique() {
        let mut c = with_clique(&h200(), 0xc8, 1);
        c[0xcb..0xce].copy_from_slice(b"AP2");
        assert_eq!(clique_cap(&c), CliqueCap::Absent);
        let mut c = with_clique(&h200(), 0xc8, 1);
        c[0xca] = 12;
        assert_eq!(clique_cap(&c), CliqueCap::Absent);
    }

    #[test]
    fn a_looping_list_ends() {
        let mut c = h200();
        c[0xb1] = 0x40;
        assert_eq!(capabilities(&c).unwrap().len(), MAX_CAPS);
    }

    proptest! {
        #[test]
        fn any_bytes_are_walked_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let caps = capabilities(&bytes);
            if let Some(caps) = caps {
                prop_assert!(caps.len() <= MAX_CAPS);
                prop_assert!(caps.iter().all(|c| c.offset >= 0x40 && c.offset % 4 == 0));
            }
            if let CliqueCap::Found { clique, version, offset } = clique_cap(&bytes) {
                prop_assert!(clique < 32 && version < 8 && offset >= 0x40);
            }
            let _ = clique_placement(&bytes);
        }

        #[test]
        fn a_written_clique_reads_back(at in prop::sample::select(vec![0xc8u8, 0xd4]), clique in 0u8..16) {
            prop_assert_eq!(clique_cap(&with_clique(&h200(), at, clique)), CliqueCap::Found { offset: at, clique, version: 0 });
        }
    }
}

/// The ACS control register (PCIe extended capability 0x000D, at +6) of a
/// bridge, when its extended configuration space (root-only, 4096 bytes)
/// was read and has one.
pub(crate) fn acs_control(config: &[u8]) -> Option<u16> {
    let mut pos = 0x100usize;
    for _ in 0..64 {
        let h = u32::from_le_bytes(config.get(pos..pos + 4)?.try_into().ok()?);
        if h == 0 || h == 0xffff_ffff {
            return None;
        }
        if h & 0xffff == 0x000d {
            let c = config.get(pos + 6..pos + 8)?;
            return Some(u16::from_le_bytes([c[0], c[1]]));
        }
        pos = (h >> 20) as usize & 0xffc;
        if pos < 0x100 {
            return None;
        }
    }
    None
}

/// ACS P2P Request Redirect (control bit 2): peer requests go up to the
/// root complex (and its IOMMU) instead of across the switch.
pub(crate) const ACS_REQUEST_REDIRECT: u16 = 1 << 2;

#[cfg(test)]
mod acs_tests {
    use super::*;

    #[test]
    fn the_acs_control_register_is_found_in_the_extended_list() {
        let mut c = vec![0u8; 4096];
        // AER at 0x100 -> ACS at 0x148 (control: source validation, request
        // and completion redirect, upstream forwarding).
        c[0x100..0x104].copy_from_slice(&(0x0001u32 | (1 << 16) | (0x148 << 20)).to_le_bytes());
        c[0x148..0x14c].copy_from_slice(&(0x000du32 | (1 << 16)).to_le_bytes());
        c[0x14e..0x150].copy_from_slice(&0x001du16.to_le_bytes());
        let ctl = acs_control(&c).unwrap();
        assert_ne!(ctl & ACS_REQUEST_REDIRECT, 0);
        assert_eq!(acs_control(&c[..256]), None);
        c[0x100..0x104].copy_from_slice(&(0x0001u32 | (0x100 << 20)).to_le_bytes());
        assert_eq!(acs_control(&c), None, "a looping list ends");
    }
}
