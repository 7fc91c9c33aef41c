//! What a GPU driver says of its own BARs through its device: that it
//! mapped them, kept them in a failed resize, resized them, or went on to
//! run the GPU. Each is a sign the BARs had addresses.

use crate::parse::words::Needle;

/// A GPU driver's note that it runs on its BARs: a resize it tried failed
/// and the old BAR stayed (`Failed to resize BAR2 to 16384M (-ENOSPC)`),
/// it runs with the small BAR (`Small BAR device`, i915/xe), or it reports
/// the VRAM it mapped (amdgpu's `VRAM: 8176M 0x...`, `Detected VRAM`).
pub(super) fn driver_mapped(msg: &str) -> bool {
    static WORDS: [Needle; 6] = [
        Needle::new("Failed to resize BAR"),
        Needle::new("BAR resize failed"),
        Needle::new("Small BAR device"),
        Needle::new("Using small BAR"),
        Needle::new("VRAM: "),
        Needle::new("Detected VRAM RAM"),
    ];
    WORDS.iter().any(|m| m.is_in(msg))
}

/// amdgpu past the start of its IP blocks' hardware (`Event::DriverRunning`):
/// a block's `hw_init` (its failure names it, `hw_init of IP block <psp>
/// failed -22`), the PSP's firmware loading and ring, a ring or IB test, a
/// page fault the memory hub reported, the KIQ's compute queues. Every IP
/// block's `sw_init` comes first (drivers/gpu/drm/amd/amdgpu/amdgpu_device.c
/// `amdgpu_device_ip_init()`), among them the memory controller's, which
/// sizes the VRAM aperture from BAR 0 (`sw_init of IP block <gmc_...>
/// failed` where it cannot, corpus 265); the register and doorbell BARs are
/// mapped before any block (`amdgpu_device_init()`). A GPU whose BARs got no
/// address stops there: `Fatal error during GPU init` and the probe's
/// `-12`, before any block speaks (corpus 106, 179, 194, 312). So a block
/// at work says the BARs had addresses, though the start failed later
/// (corpus 203, 216, 339, 344: each thread found another cause).
pub(super) fn amdgpu_started(msg: &str) -> bool {
    static WORDS: [Needle; 8] = [
        Needle::new("hw_init of IP block <"),
        Needle::new("PSP firmware loading failed"),
        Needle::new("PSP create ring failed"),
        Needle::new("PSP tmr init failed"),
        Needle::new("Will use PSP to load"),
        Needle::new("page fault (src_id:"),
        Needle::new("KCQ enable failed"),
        Needle::new("IB test failed on"),
    ];
    WORDS.iter().any(|m| m.is_in(msg)) || ring_test_failed(msg)
}

/// `ring gfx test failed (-110)`, `ring kiq_2.1.0 test failed (-110)`
/// (amdgpu_ring.c `amdgpu_ring_test_helper()`).
fn ring_test_failed(msg: &str) -> bool {
    msg.split("ring ").skip(1).any(|r| {
        r.split_once(' ')
            .is_some_and(|(name, rest)| !name.is_empty() && rest.starts_with("test failed"))
    })
}

/// i915's and xe's `[drm] BAR2 resized to 16384M` (`...MiB` in later xe):
/// `pci_resize_resource()` took the larger size, so the BAR is assigned at
/// it (drivers/gpu/drm/i915/gt/intel_region_lmem.c `i915_resize_lmem_bar()`,
/// drivers/gpu/drm/xe/xe_vram.c `resize_vram_bar()`).
pub(super) fn resized(msg: &str) -> bool {
    msg.split("BAR").skip(1).any(|r| {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0
            && r[digits..]
                .strip_prefix(" resized to ")
                .is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit()))
    })
}
